# Board entry point (copied to the board as /main.py by `walkerlab flash`).
#
# Builds the drivers from board_config, then runs WalkerFirmware in a fixed-rate
# loop: commands from USB serial, a sample every period, watchdog feed, status LED.
# The walker protocol travels over the USB CDC port as binary, so Ctrl-C is turned
# off as an interrupt. Eight Ctrl-C bytes (no upload in progress) reboot the board
# into its REPL, without the firmware or the watchdog (which cannot be stopped once
# started): what `walkerlab flash` does before copying files.
import sys
import time

import machine
import micropython
import select

from device.firmware import board_config as cfg
from device.firmware.adxl345 import ADXL345
from device.firmware.core import WalkerFirmware
from device.firmware.encoder import QuadratureEncoder
from device.firmware.hx711 import HX711
from device.firmware.status_led import led_level, pattern_for
from device.firmware.storage import FileStorage
from device.protocol import wire

BREAK = b"\x03" * 8
REPL_FLAG = "repl.flag"  # present at boot: stay in the REPL this once
FAULT_BITS = wire.STATUS_LOADCELL_FAULT | wire.STATUS_ACCEL_FAULT


class Board:
    """The hardware interface WalkerFirmware expects, on real pins."""

    simulated = False

    def __init__(self, pins):
        Pin = machine.Pin
        rate = Pin(pins["hx711_rate_pin"], Pin.OUT)
        rate.value(1 if cfg.HX711_RATE_HZ == 80 else 0)
        self.load_cells = [HX711(Pin(sck, Pin.OUT), Pin(dout, Pin.IN), cfg.HX711_GAIN)
                           for sck, dout in pins["hx711"]]
        i2c_cfg = pins["i2c"]
        i2c = machine.I2C(i2c_cfg["id"], sda=Pin(i2c_cfg["sda"]), scl=Pin(i2c_cfg["scl"]),
                          freq=i2c_cfg["freq"])
        self.accel = ADXL345(i2c, range_g=cfg.ACCEL_RANGE_G, rate_hz=cfg.ACCEL_RATE_HZ)
        a, b = pins["encoder"]
        self.encoder = QuadratureEncoder(Pin(a, Pin.IN, Pin.PULL_UP),
                                         Pin(b, Pin.IN, Pin.PULL_UP))
        self.led = Pin(pins["led"], Pin.OUT)
        self.storage = FileStorage("")
        uid = machine.unique_id()
        self.walker_id = "WL-" + "".join("%02X" % b for b in uid[-4:])


def run():
    flash = FileStorage("")
    if flash.read(REPL_FLAG) is not None:
        flash.remove(REPL_FLAG)
        print("walkerlab firmware not started: REPL requested")
        return
    board = Board(cfg.board_pins())
    out = sys.stdout.buffer
    fw = WalkerFirmware(board, out.write, accel_range_g=cfg.ACCEL_RANGE_G,
                        accel_counts_per_g=board.accel.counts_per_g,
                        encoder_ticks_per_rev=cfg.ENCODER_TICKS_PER_REV,
                        hx711_rate_hz=cfg.HX711_RATE_HZ)
    if fw.model_error:  # said again after every HELLO, and in INFO (model skipped)
        fw.log(0, wire.LOG_WARNING, fw.model_error)
    poll = select.poll()
    poll.register(sys.stdin, select.POLLIN)
    stdin = sys.stdin.buffer
    micropython.kbd_intr(-1)
    wdt = machine.WDT(timeout=cfg.WATCHDOG_MS)
    rx = bytearray()
    last = time.ticks_us()
    t_us = 0  # device time: microseconds since boot, never wraps (ticks_us does)
    next_sample = 0
    try:
        while True:
            now = time.ticks_us()
            t_us += time.ticks_diff(now, last)
            last = now
            n = 0
            while n < 256 and poll.poll(0):
                rx.extend(stdin.read(1))
                n += 1
            if rx:
                if BREAK in rx and fw._upload is None:
                    flash.write(REPL_FLAG, b"1")
                    machine.reset()
                fw.handle_bytes(rx, t_us)
                rx = bytearray()
            if t_us >= next_sample:
                if t_us - next_sample > fw.period_us:  # missed a whole period
                    fw.status |= wire.STATUS_OVERRUN
                    next_sample = t_us
                fw.sample(t_us)
                fw.status &= ~wire.STATUS_OVERRUN
                next_sample += fw.period_us
            board.led.value(led_level(pattern_for(fw.status, fw.streaming, FAULT_BITS,
                                                  wire.STATUS_MODEL_ACTIVE), t_us // 1000))
            wdt.feed()
    finally:
        micropython.kbd_intr(3)


run()
