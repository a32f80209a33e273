# Calibrated by `mirsearch bench --calibrate` (mirsearch 0.1.0) on NVIDIA H200.
# Measured: hbm_gbps (1 GiB grid-stride copy, bytes read + written),
# hbm_saturation (fewest eighths of the SMs reaching 90% of it),
# launch_us (1000 empty kernels back to back), tc_f16_tflops (cuBLAS
# 8192^3 f16 product, f32 accumulation, non-zero data), f32_tflops (FMA
# chains); medians of event-timed repetitions; smem_gbps is 128 bytes a
# clock per SM at the peak clock the device reports.  Read by
# --device-profile=FILE (data/devices.profile has the format).
device H200
  description = NVIDIA H200 (measured)
  hbm_gbps = 3889.5
  tc_f16_tflops = 756.5
  f32_tflops = 55.9
  launch_us = 4.62
  hbm_saturation = 0.75
  smem_gbps = 253.4
  smem_per_block = 232448
  sms = 132
  l2_bytes = 62914560
  max_threads_per_block = 1024
