"""ScanLab's engine: the lesson's training loop with `jax.lax.scan`, its history, data and theory,
and the carry grown up: optimizer state and learning-rate schedules.

Pure JAX and NumPy; no UI imports and no module-level state.
"""

from core.data import Draws, batches_from_draws, draw_batches, make_batches
from core.exercise import MISTAKES, Finding, Report, check_training_step
from core.linear import TRUE_PARAMS, LinearFit, linear_data, train_linear
from core.optimizers import (
    OPTIMIZERS,
    SCHEDULES,
    OptimizerHistory,
    lr_schedule,
    optimizer_histories,
    optimizer_history,
)
from core.stability import StabilityMap, stability_map
from core.strategies import (
    STRATEGIES,
    LrTraces,
    StrategyMemory,
    closed_over_lr,
    invariant_strategies,
    lr_traces,
    strategy_jaxpr,
    strategy_memory,
    where_b_lives,
)
from core.theory import (
    REGIMES,
    Moments,
    average_loss,
    critical_lr,
    critical_lrs,
    moments,
    optimum,
    regime,
    step_factors,
)
from core.timing import UNROLL_CAP, WAYS, LoopTiming, SyncTiming, time_host_sync, time_way
from core.training import (
    DIVERGENCE_RATIO,
    History,
    HistoryEngine,
    PaddedBatches,
    accumulated_gradient_step,
    python_loop_training_step,
    scan_training_step,
    training_history,
)

__all__ = [
    "OPTIMIZERS",
    "SCHEDULES",
    "OptimizerHistory",
    "lr_schedule",
    "optimizer_histories",
    "optimizer_history",
    "TRUE_PARAMS",
    "LinearFit",
    "linear_data",
    "train_linear",
    "UNROLL_CAP",
    "WAYS",
    "LoopTiming",
    "SyncTiming",
    "time_host_sync",
    "time_way",
    "STRATEGIES",
    "LrTraces",
    "StrategyMemory",
    "closed_over_lr",
    "invariant_strategies",
    "lr_traces",
    "strategy_jaxpr",
    "strategy_memory",
    "where_b_lives",
    "DIVERGENCE_RATIO",
    "Draws",
    "Finding",
    "MISTAKES",
    "REGIMES",
    "History",
    "Moments",
    "HistoryEngine",
    "PaddedBatches",
    "Report",
    "StabilityMap",
    "accumulated_gradient_step",
    "average_loss",
    "batches_from_draws",
    "check_training_step",
    "critical_lr",
    "critical_lrs",
    "draw_batches",
    "make_batches",
    "moments",
    "optimum",
    "python_loop_training_step",
    "regime",
    "scan_training_step",
    "stability_map",
    "step_factors",
    "training_history",
]
