"""calibrate: tell when an automatic check has earned enough trust to act without a person.

The public API, short and explicit. See the README for a tour.
"""

from calibrate.dataset import Filters, answers, limits, process_questions, submissions
from calibrate.errors import CalibrateError
from calibrate.profile import Kind, Limits, Question, decide, worst
from calibrate.store import connect

__all__ = [
    "CalibrateError",
    "Filters",
    "Kind",
    "Limits",
    "Question",
    "answers",
    "connect",
    "decide",
    "limits",
    "process_questions",
    "submissions",
    "worst",
]

__version__ = "0.1.0"
