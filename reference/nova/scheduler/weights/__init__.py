"""Weighers rank the hosts that passed the filters; the best-weighed host wins."""
