"""Physical simulation of a person using an instrumented rolling walker, and of the
walker's sensors (4 HX711 load cells, a seat accelerometer, a rear-wheel encoder).

* activities.py: the thesis's activity codes, the designed exp1/exp2 courses, the
  free-living Markov chain (Table 6.4) and DIFFICULTY, the one place holding every
  knob that sets how hard activities are to tell apart.
* subject.py: SubjectProfile, one person's body and habits, drawn per subject.
* person.py: PersonSimulator, which renders forces on the legs, seat acceleration and wheel distance
  (PhysicalChunk) activity by activity, continuously.
* sensors.py: walker geometry, nominal hardware, WalkerHardwareTruth (per-walker
  offsets, gains, rates, biases) and SimulatedSensors, the device a firmware
  hardware layer reads.
"""
from .activities import (ACTIVITIES, ACTIVITY_NAMES, COURSES, DIFFICULTY, EXP1_CLASSES,
                         EXP2_CLASSES, EXP2_TRANSITIONS, Difficulty, course_segments)
from . import factory_calibration  # noqa: F401  (registers the factory calibration)
from .person import PersonSimulator, PhysicalChunk
from .subject import SubjectProfile
from .sensors import (WALKER_GEOMETRY, SimulatedSensors, WalkerGeometry,
                      WalkerHardwareTruth, default_truth)

__all__ = [
    "ACTIVITIES", "ACTIVITY_NAMES", "COURSES", "DIFFICULTY", "EXP1_CLASSES", "EXP2_CLASSES",
    "EXP2_TRANSITIONS", "Difficulty", "course_segments", "PersonSimulator", "PhysicalChunk",
    "SubjectProfile", "WALKER_GEOMETRY", "SimulatedSensors", "WalkerGeometry",
    "WalkerHardwareTruth", "default_truth",
]
