# The status LED: one blink pattern per state, as (on ms, off ms, ...) cycles.
PATTERNS = {
    "fault": (100, 100),  # fast blink: a sensor stopped answering
    "streaming": (900, 100),  # mostly on, dark blip each second
    "idle": (50, 1950),  # short heartbeat flash every 2 s
    "idle_model": (50, 150, 50, 1750),  # double flash: idle, recognizer loaded
}


def pattern_for(status, streaming, fault_bits, model_bit):
    """The pattern name for the firmware's status bits."""
    if status & fault_bits:
        return "fault"
    if streaming:
        return "streaming"
    return "idle_model" if status & model_bit else "idle"


def led_level(pattern, t_ms):
    """1 if the LED is on at time t_ms in `pattern`, else 0."""
    steps = PATTERNS[pattern]
    period = 0
    for d in steps:
        period += d
    t = t_ms % period
    on = 1
    for d in steps:
        if t < d:
            return on
        t -= d
        on = 1 - on
    return 0
