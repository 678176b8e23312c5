"""What the product is about, independent of any device, simulator or window: the
activity vocabulary (activities.py)."""
