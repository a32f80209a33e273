# data/devices.profile - GPU device profiles for the mirsearch cost model
# (src/codegen/cost.c).  Installed as $(pkgdatadir)/devices.profile and also
# compiled into the library (the build turns each line of this file into a C
# string), so the library works uninstalled; an installed copy, or a file named
# with the device-profile path option, overrides the compiled-in table.  Edit
# the installed copy to calibrate the numbers for a machine.
#
# Format (line-oriented):
#   - '#' starts a comment that runs to the end of the line; blank lines are
#     ignored; leading and trailing blanks are ignored.
#   - `device NAME` starts a device section.  NAME is [A-Za-z0-9_.-]+ and is
#     unique, ignoring case, among all names and aliases in the file.
#   - `key = value` sets one field of the current section.  Each key at most
#     once per section.  Numbers are plain decimals (digits, optional
#     fraction, optional exponent e.g. 3.35e3); they are read the same in
#     every locale.  Integer keys take digits only.
#   Keys (required unless marked optional):
#     description     free text for reports                            (optional)
#     aliases         other names `--device` accepts, comma-separated   (optional)
#     hbm_gbps        HBM bandwidth, 10^9 bytes/s
#     tc_f16_tflops   dense f16 tensor-core peak (f32 accumulate), 10^12 flop/s
#     tc_bf16_tflops  dense bf16 tensor-core peak (f32 accumulate)      (optional,
#                     tc_f16_tflops: the datasheets of all three give bf16 the f16 rate)
#     tc_tf32_tflops  dense tf32 tensor-core peak                       (optional,
#                     half tc_f16_tflops, as all three datasheets give it)
#     f32_tflops      f32 non-tensor peak (an FMA counts 2), 10^12 flop/s
#     launch_us       kernel launch latency, microseconds
#     smem_per_block  shared memory one block may use (the opt-in maximum), bytes
#     sms             number of streaming multiprocessors
#     l2_bytes        L2 cache size, bytes
#     max_threads_per_block  threads one block may have                 (optional, 1024)
#     hbm_saturation  fraction of the SMs (0 < f <= 1) whose loads already
#                     saturate HBM; a kernel with fewer blocks than SMs gets
#                     bandwidth * min(1, blocks / (f * sms))          (optional, 1)
#     mem_latency_us  loaded HBM latency, microseconds: a custom kernel's bytes in
#                     flight over it bound its bandwidth                (optional, 0.7)
#     smem_gbps       shared-memory bandwidth of ONE SM, 10^9 bytes/s: the cost
#                     model's shared-memory term (absent: not priced) (optional)
#   Errors are reported as FILE:LINE:COL: error: message (unknown key, bad
#   number, missing field, duplicate device or key, text outside a section).
#
# Sources: NVIDIA datasheets (peaks are the published dense numbers, i.e. half
# the "with sparsity" figures) and the CUDA C++ Programming Guide, table
# "Technical Specifications per Compute Capability" (shared memory per block:
# 227 KB for compute capability 9.0, 163 KB for 8.0; 1 KB = 1024 bytes).
# Shared memory: 32 banks of 4 bytes, each bank serving one 32-bit word per
# clock (CUDA C++ Programming Guide, "Shared Memory" of compute capabilities
# 8.x and 9.0), i.e. 128 bytes per clock per SM, times the boost clock that
# the datasheet's FP32 peak implies (FP32 peak = SMs x FP32 lanes per SM x 2 x
# clock: H100/H200 SXM 67 TFLOPS = 132 x 128 x 2 x 1.98 GHz; A100 19.5 TFLOPS
# = 108 x 64 x 2 x 1.41 GHz): 128 x 1.98 = 253.4 GB/s and 128 x 1.41 = 180.5
# GB/s per SM.
# The H100's and H200's numbers are measured (each section says how and
# when); the A100's are leads, not measurements: launch_us and
# hbm_saturation are estimates, and every number should be calibrated on
# the device (the H100 reached 84% of its datasheet bandwidth and 77% of
# its tensor-core peak, the H200 81% and 76%) when a GPU is present.

device H100
  description = NVIDIA H100 SXM5 80GB (HBM3), calibrated
  aliases = h100-sxm, h100-sxm5, h100_sxm
  # Calibrated on an NVIDIA H100 80GB HBM3 (132 SMs, sm_90) on 2026-11-27
  # by `mirsearch bench --calibrate` in scripts/device-check.sh (bundle of
  # commit 66eb09f; bench/RESULTS.md, "Device check log";
  # bench/device/2026-11-27-h100/H100.profile): a 1 GiB grid-stride copy
  # (bytes read + written) 2812.7 GB/s, 84% of the datasheet's 3.35 TB/s;
  # cuBLAS 8192^3 products on non-zero data, f16 758.2 TFLOPS (77% of the
  # datasheet's 989.4 dense), bf16 790.1, f32 in tf32 415.5; FMA chains
  # 57.5 TFLOPS; 1000 empty launches back to back 3.72 us each; 5 of 8
  # eighths of the SMs already reach 90% of the copy bandwidth; 0.448 us
  # of loaded latency (bytes in flight over bandwidth).  A second
  # calibration on the same machine a minute later: 2790.3 GB/s, f16 739,
  # bf16 780.6, tf32 407, FMA 57.2, 4.21 us a launch, 0.451 us.  Shared-memory
  # bandwidth is not measured: the datasheet's clock (see above).
  hbm_gbps = 2812.7
  tc_f16_tflops = 758.2
  tc_bf16_tflops = 790.1
  tc_tf32_tflops = 415.5
  f32_tflops = 57.5
  launch_us = 3.719
  smem_per_block = 232448     # 227 KB, compute capability 9.0
  sms = 132
  l2_bytes = 52428800         # 50 MB, as the device reports it
  max_threads_per_block = 1024
  hbm_saturation = 0.625
  mem_latency_us = 0.448
  smem_gbps = 253.4            # 128 B/clock/SM x 1.98 GHz (see above)

device H200
  description = NVIDIA H200 SXM 141GB (HBM3e), calibrated
  aliases = h200-sxm, h200_sxm
  # Calibrated on an NVIDIA H200 (132 SMs, sm_90) on 2026-11-27 by
  # `mirsearch bench --calibrate` in scripts/device-check.sh (bundle of
  # commit cdbb0bb; bench/RESULTS.md, "Device check log"): a 1 GiB
  # grid-stride copy (bytes read + written) 3889.5 GB/s, 81% of the
  # datasheet's 4.8 TB/s; a cuBLAS 8192^3 f16 product on non-zero data
  # 756.5 TFLOPS, 76% of the datasheet's 989.4 dense; FMA chains 55.9
  # TFLOPS; 1000 empty launches back to back 4.62 us each; 99 of the 132
  # SMs (three quarters) already reach 90% of the copy bandwidth.  The
  # device reports a 60 MiB L2 (62914560 B) where the whitepaper's GH100
  # has 50 MB.  Shared-memory bandwidth is not measured: the datasheet's
  # clock, as for the H100.
  hbm_gbps = 3889.5
  tc_f16_tflops = 756.5
  f32_tflops = 55.9
  launch_us = 4.62
  smem_per_block = 232448     # 227 KB, compute capability 9.0
  sms = 132
  l2_bytes = 62914560         # as the device reports it
  max_threads_per_block = 1024
  hbm_saturation = 0.75
  smem_gbps = 253.4            # 128 B/clock/SM x 1.98 GHz (see above)

device A100
  description = NVIDIA A100 SXM4 80GB (HBM2e)
  aliases = a100-sxm, a100-sxm4, a100-80gb, a100_sxm
  # NVIDIA A100 Tensor Core GPU datasheet (80GB SXM column): 2,039 GB/s
  # HBM2e, FP16/BF16 tensor 312 TFLOPS dense (624 with sparsity), FP32
  # 19.5 TFLOPS.  108 SMs and 40 MB L2 (NVIDIA A100 whitepaper).
  hbm_gbps = 2039
  tc_f16_tflops = 312
  f32_tflops = 19.5
  launch_us = 4
  smem_per_block = 166912     # 163 KB, compute capability 8.0
  sms = 108
  l2_bytes = 41943040         # 40 MB
  max_threads_per_block = 1024
  hbm_saturation = 0.5
  smem_gbps = 180.5            # 128 B/clock/SM x 1.41 GHz (see above)
