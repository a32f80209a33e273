/* tests/fuzz/replay.c - runs a harness's LLVMFuzzerTestOneInput on every
 * file of its corpus (the arguments, files or directories; with none,
 * $top_srcdir/tests/fuzz/corpus/NAME where NAME is this program's name
 * after "replay_"), so every past finding stays a test of `make check`
 * without libFuzzer.  Exit 0 when every input ran (a harness aborts on a
 * broken property). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/* Run the harness on one file; 1 when it was read. */
static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return 0;
  size_t cap = 1 << 16, n = 0;
  uint8_t *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap || cap >= (1u << 24))
      break;
    uint8_t *b = realloc(buf, cap * 2);
    if (!b)
      break;
    buf = b;
    cap *= 2;
  }
  fclose(f);
  if (!buf)
    return 0;
  LLVMFuzzerTestOneInput(buf, n);
  free(buf);
  return 1;
}

/* Run a file, or every file of a directory; returns how many ran. */
static int run_path(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0)
    return 0;
  if (!S_ISDIR(st.st_mode))
    return run_file(path);
  DIR *d = opendir(path);
  if (!d)
    return 0;
  int count = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", path, e->d_name);
    count += run_file(p);
  }
  closedir(d);
  return count;
}

int main(int argc, char **argv) {
  int count = 0;
  if (argc > 1) {
    for (int i = 1; i < argc; i++)
      count += run_path(argv[i]);
  } else {
    const char *top = getenv("top_srcdir");
    const char *base = strrchr(argv[0], '/');
    base = base ? base + 1 : argv[0];
    const char *name = strncmp(base, "replay_", 7) == 0 ? base + 7 : base;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/%s", top ? top : ".", name);
    count = run_path(dir);
    if (count == 0) {
      fprintf(stderr, "replay: no inputs in %s\n", dir);
      return 1;
    }
  }
  printf("replay: %d inputs ran\n", count);
  return 0;
}
