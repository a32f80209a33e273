/* SPDX-License-Identifier: MIT */
/* src/cli/outdir.c - the output directory of a search (see outdir.h for
 * the layout and the order of writes).
 *
 * Why one syncfs instead of a fsync per file: an fsync is a journal
 * commit, so a few thousand candidates took tens of seconds, longer than a
 * batch system's grace period between SIGTERM and SIGKILL.  The files are
 * written into candidates.tmp/, which no reader takes for a result: until
 * the rename and the final report.json, the directory never looks
 * complete. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/outdir.h"

enum { OK = 0, BAD = 2, RESOURCE = 3 };

/* Remove every regular file in directory `name` under dirfd, then the
 * directory; a missing one is fine. */
static int remove_tree1(int dirfd, const char *name) {
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return errno == ENOENT ? 0 : -1;
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return -1;
  }
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      (void)unlinkat(fd, e->d_name, 0);
  closedir(d);
  return unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -1;
}

/* Whether name is a temp file an atomic write left: "*.tmp.PID". */
static int is_leftover_temp(const char *name) {
  const char *t = strstr(name, ".tmp.");
  if (!t || t == name)
    return 0;
  t += 5;
  if (!*t)
    return 0;
  for (; *t; t++)
    if (*t < '0' || *t > '9')
      return 0;
  return 1;
}

/* Remove what an earlier run wrote: report.json first, so an interrupted
 * clean-up never leaves a directory that looks complete. */
static int clear_old(mirs__outdir *od, char *why, size_t whysize) {
  if (unlinkat(od->dirfd, "report.json", 0) != 0 && errno != ENOENT) {
    snprintf(why, whysize, "%s/report.json: cannot remove: %s", od->path, strerror(errno));
    return RESOURCE;
  }
  (void)unlinkat(od->dirfd, "best.ugraph", 0);
  (void)unlinkat(od->dirfd, "best.cu", 0);
  if (remove_tree1(od->dirfd, "candidates") != 0 || remove_tree1(od->dirfd, "candidates.tmp") != 0) {
    snprintf(why, whysize, "%s/candidates: cannot remove the previous run's candidates: %s",
             od->path, strerror(errno));
    return RESOURCE;
  }
  int fd = dup(od->dirfd);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0)
      close(fd);
    return OK;
  }
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (is_leftover_temp(e->d_name))
      (void)unlinkat(od->dirfd, e->d_name, 0);
  closedir(d);
  return OK;
}

/* Exit status for an errno from creating or opening the directory. */
static int status_for(int e) {
  return e == ENOENT || e == ENOTDIR || e == ENAMETOOLONG || e == ELOOP ? BAD : RESOURCE;
}

/* Check, create and lock. */
int mirs__outdir_open(mirs__outdir *od, const char *dir, char *why, size_t whysize) {
  od->dirfd = od->lockfd = -1;
  size_t len = strlen(dir);
  if (len == 0) {
    snprintf(why, whysize, "the output directory name is empty");
    return BAD;
  }
  /* Room for "/candidates.tmp/RANK-HASH.ugraph" under PATH_MAX. */
  if (len >= sizeof od->path || len + 64 >= PATH_MAX) {
    snprintf(why, whysize, "output directory path too long (%zu bytes; at most %d)", len,
             PATH_MAX - 65 < (int)sizeof od->path - 1 ? PATH_MAX - 65 : (int)sizeof od->path - 1);
    return BAD;
  }
  memcpy(od->path, dir, len + 1);
  struct stat st;
  if (stat(dir, &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      snprintf(why, whysize, "%s: exists and is not a directory", dir);
      return BAD;
    }
  } else if (errno != ENOENT) {
    int e = errno;
    snprintf(why, whysize, "%s: %s", dir, strerror(e));
    return status_for(e);
  } else if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    int e = errno;
    /* ENOENT usually means a missing parent; say so only when it is. */
    char parent[sizeof od->path];
    memcpy(parent, dir, len + 1);
    char *slash = strrchr(parent, '/');
    if (slash == parent)
      slash[1] = '\0';
    else if (slash)
      *slash = '\0';
    else
      strcpy(parent, ".");
    int missing = e == ENOENT && stat(parent, &st) != 0;
    snprintf(why, whysize, "%s: cannot create the output directory: %s", dir,
             missing ? "its parent directory does not exist" : strerror(e));
    return status_for(e);
  }
  od->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (od->dirfd < 0) {
    int e = errno;
    snprintf(why, whysize, "%s: cannot open the output directory: %s", dir, strerror(e));
    return status_for(e);
  }
  od->lockfd = openat(od->dirfd, ".lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (od->lockfd < 0) {
    int e = errno;
    snprintf(why, whysize, "%s: the output directory is not writable: %s", dir, strerror(e));
    mirs__outdir_close(od);
    return RESOURCE;
  }
  if (flock(od->lockfd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    char pid[32] = "";
    ssize_t n = pread(od->lockfd, pid, sizeof pid - 1, 0);
    pid[n > 0 ? n : 0] = '\0';
    pid[strcspn(pid, "\n")] = '\0';
    if (e == EWOULDBLOCK)
      snprintf(why, whysize,
               "%s: the output directory is in use by another mirsearch run%s%s%s; wait for it "
               "or choose another --out",
               dir, pid[0] ? " (pid " : "", pid, pid[0] ? ")" : "");
    else
      snprintf(why, whysize, "%s/.lock: cannot lock: %s", dir, strerror(e));
    mirs__outdir_close(od);
    return RESOURCE;
  }
  char pid[32];
  int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
  if (ftruncate(od->lockfd, 0) != 0 || pwrite(od->lockfd, pid, (size_t)n, 0) != n) {
    int e = errno;
    snprintf(why, whysize, "%s: the output directory is not writable: %s", dir, strerror(e));
    mirs__outdir_close(od);
    return RESOURCE;
  }
  return OK;
}

/* Remove the previous run's outputs. */
int mirs__outdir_clear(mirs__outdir *od, char *why, size_t whysize) {
  int rc = clear_old(od, why, whysize);
  if (rc != OK)
    mirs__outdir_close(od);
  return rc;
}

/* Write all of data to a new file name under dirfd (no sync); each file
 * is one step of the write (mirs_io_step). */
static int write_new(mirs_context *ctx, int dirfd, const char *name, const char *data,
                     size_t len) {
  if (mirs_io_step(ctx, name) != 0)
    return -1;
  int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return -1;
  while (len) {
    ssize_t w = write(fd, data, len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      int e = w < 0 ? errno : EIO;
      close(fd);
      errno = e;
      return -1;
    }
    data += w;
    len -= (size_t)w;
  }
  return close(fd);
}

/* Write the results, best.ugraph, best.cu and report.json.  A failure
 * removes what this call wrote (candidates.tmp/ and the temp files), so a
 * full disk is not left fuller; what an earlier step made durable (the
 * checkpoint) is the caller's. */
int mirs__outdir_write(mirs__outdir *od, mirs_context *ctx, const mirs_search *s, int top,
                       const char *report, size_t len, char *why, size_t whysize) {
  int n = mirs_search_num_results(s);
  if (top > 0 && top < n)
    n = top;
  const char *stage = "candidates.tmp";
  if (mirs_io_step(ctx, "create candidates.tmp") != 0 ||
      (mkdirat(od->dirfd, stage, 0777) != 0 && errno != EEXIST)) {
    snprintf(why, whysize, "%s/%s: cannot create: %s", od->path, stage, strerror(errno));
    return RESOURCE;
  }
  int cfd = openat(od->dirfd, stage, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (cfd < 0) {
    snprintf(why, whysize, "%s/%s: cannot open: %s", od->path, stage, strerror(errno));
    (void)remove_tree1(od->dirfd, stage);
    return RESOURCE;
  }
  char name[64], best_tmp[64], cu_tmp[64];
  snprintf(best_tmp, sizeof best_tmp, "best.ugraph.tmp.%ld", (long)getpid());
  snprintf(cu_tmp, sizeof cu_tmp, "best.cu.tmp.%ld", (long)getpid());
  int rc = OK;
  /* best.ugraph and best.cu: the best result (the model's first, or the
   * measured fastest: mirs_search_best), synced and renamed with the rest. */
  if (n > 0) {
    char *cu = NULL, *text = NULL;
    const mirs_graph *best = mirs_search_result(s, mirs_search_best(s));
    if (mirs_codegen_cuda(best, NULL, &cu) != MIRS_OK) {
      snprintf(why, whysize, "best.cu: %s", mirs_last_error(ctx));
      rc = RESOURCE;
    } else if (write_new(ctx, od->dirfd, cu_tmp, cu, strlen(cu)) != 0) {
      snprintf(why, whysize, "%s: cannot write %s: %s", od->path, cu_tmp, strerror(errno));
      rc = RESOURCE;
    } else if (mirs_graph_to_string(best, &text) != MIRS_OK) {
      snprintf(why, whysize, "%s", mirs_last_error(ctx)[0] ? mirs_last_error(ctx) : "out of memory");
      rc = RESOURCE;
    } else if (write_new(ctx, od->dirfd, best_tmp, text, strlen(text)) != 0) {
      snprintf(why, whysize, "%s: cannot write %s: %s", od->path, best_tmp, strerror(errno));
      rc = RESOURCE;
    }
    mirs_free(mirs_graph_context(best), cu); /* the result's own context */
    mirs_free(ctx, text);
  }
  for (int i = 0; rc == OK && i < n; i++) {
    char *text = NULL;
    mirs_status st = mirs_graph_to_string(mirs_search_result(s, i), &text);
    if (st == MIRS_OK)
      st = mirs_search_result_file_name(s, i, name, sizeof name);
    if (st != MIRS_OK) {
      snprintf(why, whysize, "%s", mirs_last_error(ctx)[0] ? mirs_last_error(ctx) : "out of memory");
      rc = RESOURCE;
    } else if (write_new(ctx, cfd, name, text, strlen(text)) != 0) {
      snprintf(why, whysize, "%s/%s: cannot write %s: %s", od->path, stage, name, strerror(errno));
      rc = RESOURCE;
    }
    mirs_free(ctx, text);
  }
  /* One flush of the file system for every file above, then the renames
   * and one sync of each directory that changed. */
  if (rc == OK && (mirs_io_step(ctx, "sync the candidates") != 0 || syncfs(cfd) != 0 ||
                   fsync(cfd) != 0)) {
    snprintf(why, whysize, "%s: cannot sync the candidates: %s", od->path, strerror(errno));
    rc = RESOURCE;
  }
  close(cfd);
  if (rc == OK && (mirs_io_step(ctx, "rename candidates.tmp") != 0 ||
                   renameat(od->dirfd, stage, od->dirfd, "candidates") != 0)) {
    snprintf(why, whysize, "%s/candidates: cannot rename into place: %s", od->path,
             strerror(errno));
    rc = RESOURCE;
  }
  if (rc == OK && n > 0 && (mirs_io_step(ctx, "rename best.ugraph") != 0 ||
                            renameat(od->dirfd, best_tmp, od->dirfd, "best.ugraph") != 0)) {
    snprintf(why, whysize, "%s/best.ugraph: cannot rename into place: %s", od->path,
             strerror(errno));
    rc = RESOURCE;
  }
  if (rc == OK && n > 0 && (mirs_io_step(ctx, "rename best.cu") != 0 ||
                            renameat(od->dirfd, cu_tmp, od->dirfd, "best.cu") != 0)) {
    snprintf(why, whysize, "%s/best.cu: cannot rename into place: %s", od->path, strerror(errno));
    rc = RESOURCE;
  }
  if (rc == OK && (mirs_io_step(ctx, "sync the output directory") != 0 || fsync(od->dirfd) != 0)) {
    snprintf(why, whysize, "%s: cannot sync: %s", od->path, strerror(errno));
    rc = RESOURCE;
  }
  if (rc != OK) {
    /* Nothing of this write stays: no partial directory fills the disk
     * (a complete candidates/ without report.json is removed by the
     * next run's clearing). */
    int e = errno;
    (void)unlinkat(od->dirfd, best_tmp, 0);
    (void)unlinkat(od->dirfd, cu_tmp, 0);
    (void)remove_tree1(od->dirfd, stage);
    errno = e;
    return rc;
  }
  char path[sizeof od->path + 16];
  snprintf(path, sizeof path, "%s/report.json", od->path);
  if (mirs_write_file_atomic(ctx, path, report, len) != MIRS_OK) {
    snprintf(why, whysize, "%s", mirs_last_error(ctx));
    return RESOURCE;
  }
  return OK;
}

/* Remove the checkpoint file name in the directory, once report.json is
 * durable (the directory is synced so its removal is too). */
int mirs__outdir_drop_checkpoint(mirs__outdir *od, mirs_context *ctx, const char *name) {
  if (mirs_io_step(ctx, "remove the checkpoint") != 0 ||
      (unlinkat(od->dirfd, name, 0) != 0 && errno != ENOENT))
    return -1;
  if (mirs_io_step(ctx, "sync the output directory") != 0 || fsync(od->dirfd) != 0)
    return -1;
  return 0;
}

/* Unlock and close. */
void mirs__outdir_close(mirs__outdir *od) {
  if (od->lockfd >= 0)
    close(od->lockfd); /* releases the flock */
  if (od->dirfd >= 0)
    close(od->dirfd);
  od->lockfd = od->dirfd = -1;
}
