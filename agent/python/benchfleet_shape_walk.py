"""The shape walk (Job.walk_batches): the model, once compiled at the job's batch, called at each
batch size of the matrix in the same process, to show what changing shapes cost: recompiles and
per-batch latency (the "slow again after a while" effect).

    telemetry.update(shape_walk(job.walk_batches, inputs_at, call, synchronize, graphs))

For each batch size, ascending: one call timed on its own (walk_b<B>_first_ms: any recompile
included), then WALK_CALLS more, timed one by one (walk_b<B>_median_ms: their median), then the
number of graphs dynamo has compiled so far (walk_b<B>_graphs). At the end walk_recompiles: the
graphs compiled during the walk. The keys are flat scalars (a result's telemetry is one flat map):
walk_batches is the list as text ("1,4,16"). Without a graph counter (eager) there are no
*_graphs keys and no walk_recompiles.

The job's own batch is measured after the walk, with whichever graph dynamo then picks for it
(after an automatic-dynamic recompile possibly the dynamic one rather than its first, static
graph): in a walking job the measured latency is the one after shapes changed. Its memory
peaks (result.memory) include the walk's batch sizes too.

A failure at one batch size (out of memory at a batch larger than the job's, a compile error)
ends the walk, not the job: walk_error holds the message, the keys of the batch sizes walked
before it stay, and the job's own batch is measured as usual.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

WALK_CALLS = 5
_MAX_ERROR_CHARS = 2000


def shape_walk(batches: Sequence[int], inputs_at: Callable[[int], List[Any]], call: Callable[[List[Any]], None],
               synchronize: Callable[[], None], graphs: Optional[Callable[[], int]] = None,
               clock: Callable[[], float] = time.perf_counter) -> Dict[str, Any]:
    """The walk's telemetry. inputs_at(b): the model's inputs at batch b (made before timing);
    call(inputs): one call, its output dropped; synchronize(): waits for the device; graphs(): the
    number of graphs compiled so far (None: eager); clock: seconds (for tests)."""
    telemetry: Dict[str, Any] = {"walk_batches": ",".join(str(b) for b in batches)}
    graphs_before = graphs() if graphs else 0
    try:
        for b in batches:
            inputs = inputs_at(b)
            synchronize()
            start = clock()
            call(inputs)
            synchronize()
            telemetry[f"walk_b{b}_first_ms"] = (clock() - start) * 1000
            times = []
            for _ in range(WALK_CALLS):
                start = clock()
                call(inputs)
                synchronize()
                times.append((clock() - start) * 1000)
            telemetry[f"walk_b{b}_median_ms"] = statistics.median(times)
            if graphs:
                telemetry[f"walk_b{b}_graphs"] = graphs()
            del inputs
    except Exception as e:  # the job's own measurement still follows
        text = f"at batch {b}: {type(e).__name__}: {e}".split("\nException raised from")[0]
        telemetry["walk_error"] = text[:_MAX_ERROR_CHARS]
    if graphs:
        telemetry["walk_recompiles"] = graphs() - graphs_before
    return telemetry
