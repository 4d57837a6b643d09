// The fault-injection suite's common report: each program in tests/fault injects one
// class of fault into real processes (kill -9 of agents, kill -9 of the coordinator, a network
// partition between namespaces) and prints one row of the same table, so scripts/fault-suite.sh
// can put the rows side by side:
//
//   fault class                  injected  lost  duplicated  recovery p50 / max
//   agent kill -9 mid-job             100     0           0      2.1 s / 4.0 s
//
// "lost": a result the system should hold and does not (a job that never reached an end, an
// acknowledged result missing after a restart, a spooled result never delivered);
// "duplicated": more than one stored result for one job, or one result stored twice.
#pragma once

#include <string>
#include <vector>

namespace benchfleet::testing {

struct FaultRow {
  std::string fault_class;  // e.g. "agent kill -9 mid-job"
  int injected = 0;         // faults injected
  long checked = 0;         // results (or jobs) checked for loss and duplication
  long lost = 0;
  long duplicated = 0;
  std::vector<double> recovery_s;  // one per fault: time until the system served again
  std::string recovery_meaning;    // what "recovered" means for this class, one line
};

// Prints `rows` as an aligned text table (columns: fault class, injected, checked, lost,
// duplicated, recovery p50 / max) followed by each row's recovery meaning.
void print_fault_table(const std::vector<FaultRow>& rows);

// The row as one JSON object (the same fields; recovery as p50_s, max_s and the raw list), for
// scripts that gather rows (--json).
std::string fault_row_json(const FaultRow& row);

// Whether the row shows a clean run: nothing lost or duplicated. A program's exit code follows it.
inline bool fault_row_clean(const FaultRow& row) { return row.lost == 0 && row.duplicated == 0; }

}  // namespace benchfleet::testing
