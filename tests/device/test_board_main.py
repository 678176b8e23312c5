"""device/firmware/main.py, the board loop, under CPython with a stand-in `machine`
module whose pins and I2C bus are the simulated electronics of device/sim/hardware.py."""
import io
import os
import runpy
import sys
import types

import pytest

from device.firmware import board_config
from device.protocol import wire
from device.sim.hardware import SimADXL345, SimHX711, SimI2C, SimQuadrature
from device.sim.sensors import SimulatedSensors

MAIN = os.path.join(os.path.dirname(board_config.__file__), "main.py")
PINS = board_config.BOARDS["rp2"]


class FakeMachine(types.ModuleType):
    """machine.Pin / I2C / WDT / unique_id / reset on simulated hardware; the clock
    (time.ticks_us) advances 500 us per call and drives the simulation."""

    def __init__(self, sensors, stdin_w, commands, break_at_us):
        super().__init__("machine")
        self.sensors = sensors
        self.chips = [SimHX711(self, i) for i in range(4)]
        self.wheel = SimQuadrature()
        self.adxl = SimADXL345(self)
        self.now = 0
        self.feeds = 0
        self.led = []
        self.commands = sorted(commands)  # (t_us, bytes) written to stdin when due
        self.break_at_us = break_at_us
        self.stdin_w = stdin_w
        machine = self

        class Pin:
            OUT, IN, PULL_UP = 1, 0, 2
            IRQ_RISING, IRQ_FALLING = 8, 4

            def __new__(cls, ident, mode=None, pull=None):
                for (sck, dout), chip in zip(PINS["hx711"], machine.chips):
                    if ident == sck:
                        return chip.sck
                    if ident == dout:
                        return chip.dout_pin
                if ident == PINS["encoder"][0]:
                    return machine.wheel.pin_a
                if ident == PINS["encoder"][1]:
                    return machine.wheel.pin_b
                return object.__new__(cls)

            def __init__(self, ident, mode=None, pull=None):
                self.ident = ident

            def value(self, v=None):
                if self.ident == PINS["led"] and v is not None:
                    machine.led.append(v)

        class WDT:
            def __init__(self, timeout):
                assert timeout == board_config.WATCHDOG_MS

            def feed(self):
                machine.feeds += 1

        self.Pin = Pin
        self.WDT = WDT
        self.I2C = lambda *a, **k: SimI2C({0x53: self.adxl})
        self.unique_id = lambda: b"\x01\x02\xab\xcd\xef\x12"

    def reset(self):
        raise SystemExit("machine.reset")

    def ticks_us(self):
        self.now += 500
        if self.now == 800_000:  # the loop stalls 100 ms once (a slow flash write, say)
            self.now += 100_000
        self.sensors.advance_to(self.now * 1e-6)
        self.wheel.sync(self.sensors.encoder_count())
        while self.commands and self.commands[0][0] <= self.now:
            os.write(self.stdin_w, self.commands.pop(0)[1])
        if self.now >= self.break_at_us and self.break_at_us:
            os.write(self.stdin_w, b"\x03" * 8)
            self.break_at_us = 0
        return self.now


def _run_main(monkeypatch, tmp_path, commands, break_at_us):
    r, w = os.pipe()
    sensors = SimulatedSensors("free", seed=2, duration_s=60)
    machine = FakeMachine(sensors, w, commands, break_at_us)
    micro = types.ModuleType("micropython")
    micro.kbd_intr = lambda c: setattr(micro, "kbd", c)
    monkeypatch.setitem(sys.modules, "machine", machine)
    monkeypatch.setitem(sys.modules, "micropython", micro)
    monkeypatch.setattr("time.ticks_us", machine.ticks_us, raising=False)
    monkeypatch.setattr("time.ticks_diff", lambda a, b: a - b, raising=False)
    monkeypatch.setattr(board_config, "board_pins", lambda platform=None: PINS)
    stdin = io.TextIOWrapper(os.fdopen(r, "rb", buffering=0))
    out = io.BytesIO()
    stdout = types.SimpleNamespace(buffer=out)
    monkeypatch.setattr(sys, "stdin", stdin)
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit, match="machine.reset"):
        runpy.run_path(MAIN, run_name="__main__")
    os.close(w)
    stdin.close()
    return machine, micro, out.getvalue()


def test_board_loop_samples_at_rate_answers_commands_feeds_watchdog_and_breaks(
        monkeypatch, tmp_path):
    cmds = [(100_000, wire.encode_frame(wire.CMD_HELLO, 1, 0)),
            (200_000, wire.encode_frame(wire.CMD_START, 2, 0)),
            (1_200_000, wire.encode_frame(wire.CMD_SET_RATE, 3, 0, wire.pack_set_rate(100)))]
    machine, micro, data = _run_main(monkeypatch, tmp_path, cmds, break_at_us=2_200_000)
    frames = wire.FrameDecoder().feed(data)
    info = [wire.unpack_info(f.payload) for f in frames if f.frame_type == wire.INFO]
    assert info and info[0]["walker_id"] == "WL-ABCDEF12" and not info[0]["simulated"]
    assert info[0]["accel_counts_per_g"] == 256 and info[0]["hx711_rate_hz"] == 80
    acks = [wire.unpack_ack(f.payload)[0] for f in frames if f.frame_type == wire.ACK]
    assert acks == [wire.CMD_HELLO, wire.CMD_START, wire.CMD_SET_RATE]
    samples = [(f.t_us, wire.unpack_sample(f.payload)) for f in frames
               if f.frame_type == wire.SAMPLE]
    t = [s[0] for s in samples]
    steps = [b - a for a, b in zip(t, t[1:])]
    overrun = [k for k, (_, s) in enumerate(samples) if s[9] & wire.STATUS_OVERRUN]
    assert len(overrun) == 1 and 100_000 < steps[overrun[0] - 1] <= 120_500
    del steps[overrun[0] - 1]  # the stall; around it the loop keeps its rate
    assert sorted(set(steps)) == [10_000, 20_000]  # 50 Hz, then 100 Hz after SET_RATE
    assert 0.15e6 < t[0] < 0.3e6 and 1.9e6 < t[-1] <= 2.2e6
    assert all(s[9] & wire.STATUS_SIMULATED == 0 for _, s in samples)
    assert not any(s[9] & (wire.STATUS_LOADCELL_FAULT | wire.STATUS_ACCEL_FAULT)
                   for _, s in samples)
    # the drivers ran: loads near the walker's own weight, gravity on z, fresh bits
    late = [s[8] for t_s, s in samples if t_s > 1_300_000]  # 100 Hz, HX711s at 80 Hz
    fresh_rate = sum(bin(b).count("1") for b in late) / (4 * len(late))
    assert 0.7 < fresh_rate < 0.9
    assert all(200 < s[2] < 320 for _, s in samples)
    assert machine.feeds >= (2_200_000 - 100_000) // 500 - 10  # fed on every pass
    assert set(machine.led) == {0, 1}
    assert micro.kbd == 3  # Ctrl-C restored on the way out
    assert (tmp_path / "repl.flag").exists()  # the break asks for the REPL


def test_board_boots_into_the_repl_when_asked(monkeypatch, tmp_path, capsys):
    (tmp_path / "repl.flag").write_bytes(b"1")
    monkeypatch.chdir(tmp_path)
    micro = types.ModuleType("micropython")
    monkeypatch.setitem(sys.modules, "machine", types.ModuleType("machine"))
    monkeypatch.setitem(sys.modules, "micropython", micro)
    runpy.run_path(MAIN, run_name="__main__")  # returns: no loop, no watchdog
    assert not (tmp_path / "repl.flag").exists()
    assert "REPL requested" in capsys.readouterr().out
