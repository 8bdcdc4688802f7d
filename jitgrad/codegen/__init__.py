"""Kernel source generation (pure: specs in, text out) and the content-addressed kernel cache."""
