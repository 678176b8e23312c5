# Pin assignment of the supported boards (GPIO numbers). main.py picks the entry of
# the running port (sys.platform "rp2" or "esp32"); docs/firmware.md has the wiring.
import sys

BOARDS = {
    "rp2": {  # Raspberry Pi Pico (RP2040)
        "name": "Raspberry Pi Pico",
        # One HX711 per leg, order FR, FL, RL, RR: (PD_SCK, DOUT).
        "hx711": ((2, 3), (6, 7), (8, 9), (10, 11)),
        "hx711_rate_pin": 12,  # RATE: high = 80 Hz, low = 10 Hz (all four chips)
        "i2c": {"id": 0, "sda": 4, "scl": 5, "freq": 400000},
        "encoder": (14, 15),  # channel A, channel B (internal pull-ups)
        "led": "LED",  # the on-board LED
    },
    "esp32": {  # ESP32-DevKitC (avoids the strapping pins 0, 2, 5, 12, 15)
        "name": "ESP32-DevKitC",
        "hx711": ((25, 26), (27, 14), (32, 33), (18, 19)),
        "hx711_rate_pin": 23,
        "i2c": {"id": 0, "sda": 21, "scl": 22, "freq": 400000},
        "encoder": (16, 17),
        "led": 13,
    },
}

# What every board runs with (also reported in INFO).
HX711_RATE_HZ = 80
HX711_GAIN = 128
ACCEL_RANGE_G = 16
ACCEL_RATE_HZ = 200
ENCODER_TICKS_PER_REV = 256
WATCHDOG_MS = 2000
MODEL_FILE = "model.wlm"


def board_pins(platform=None):
    """The pin table of `platform` (default: the running MicroPython port)."""
    key = platform or sys.platform
    if key not in BOARDS:
        raise ValueError("no pin table for platform %r (have: %s)"
                         % (key, ", ".join(sorted(BOARDS))))
    return BOARDS[key]
