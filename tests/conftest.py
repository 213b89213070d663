"""Shared pytest set-up: Warp without banner and module-load lines."""

import warp as wp

wp.config.log_level = wp.LOG_WARNING
