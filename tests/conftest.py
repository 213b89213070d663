"""Shared pytest set-up: quiet Warp on the CPU device (the kernels are the same on CUDA)."""

import warp as wp

wp.config.quiet = True
wp.init()
