# Calibrated by `mirsearch bench --calibrate` (mirsearch 0.1.0) on NVIDIA H100 80GB HBM3.
# Measured: hbm_gbps (1 GiB grid-stride copy, bytes read + written),
# hbm_saturation (fewest eighths of the SMs reaching 90% of it),
# mem_latency_us (bytes in flight over the bandwidth of loads whose
# number in flight bounds it: 1, 2, 4 of 16 bytes a thread, 256 an SM),
# launch_us (1000 empty kernels back to back), tc_f16_tflops,
# tc_bf16_tflops and tc_tf32_tflops (cuBLAS 8192^3 products of f16,
# bf16 and f32 in tf32, f32 accumulation, non-zero data), f32_tflops (FMA
# chains); medians of event-timed repetitions; smem_gbps is 128 bytes a
# clock per SM at the peak clock the device reports.  Read by
# --device-profile=FILE (data/devices.profile has the format).
device H100
  description = NVIDIA H100 80GB HBM3 (measured)
  hbm_gbps = 2812.7
  tc_f16_tflops = 758.2
  tc_bf16_tflops = 790.1
  tc_tf32_tflops = 415.5
  f32_tflops = 57.5
  launch_us = 3.719
  hbm_saturation = 0.625
  mem_latency_us = 0.448
  smem_gbps = 253.4
  smem_per_block = 232448
  sms = 132
  l2_bytes = 52428800
  max_threads_per_block = 1024
