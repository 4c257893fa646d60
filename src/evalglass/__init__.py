"""EvalGlass: evaluations of AI applications whose green means one specific, approved thing."""

__version__ = "0.1.0"
