// A local job's result, as `taas run` tells it: the chief's report (taas/job_report), which the
// runtime leaves in the file TAAS_TERMINATION_MESSAGE_PATH names, as it leaves a pod's in
// /dev/termination-log, and the words of the console's last line. The file is the replica's
// (hostile): it is read with a bounded size and never waited on.
#pragma once

#include <string>

#include "taas/base/status.h"
#include "taas/job_report/job_report.h"

namespace taas::launcher {

// The folder of a local job's files per replica (logs, termination messages): <model dir>/logs,
// so they stay with the model dir.
std::string ReplicaFilesDir(const std::string& model_dir);

// Where the launcher tells `replica` to leave its termination message
// (contract::kTerminationMessagePathEnv): <files dir>/<replica>.termination-log, beside its log.
std::string TerminationMessagePath(const std::string& files_dir, const std::string& replica);

// The report in the file at `path`. NotFound when there is no such file (the replica ran no taas
// trainer: the runtime creates the file when it starts); FailedPrecondition when it is empty (a
// trainer that left no report) or not a regular file (a FIFO is never opened for a wait);
// InvalidArgument from job_report::Parse (at most kMaxReportBytes + 1 bytes are read, so a larger
// file is refused as too large); every message names the path.
absl::StatusOr<job_report::JobReport> ReadJobReport(const std::string& path);

// The job's result (job_report::JobResult) from the reports that its chief and its evaluator
// (replica names; an empty `evaluator`: the job has none, or it still runs) left in `files_dir`.
// A report that cannot be read counts as none; when neither gives a result, the error is the
// chief's (ReadJobReport's), or the evaluator's when only the evaluator ran a trainer: NotFound
// says that no report was to be had (a plain command's job).
absl::StatusOr<job_report::JobReport> ReadJobResult(const std::string& files_dir,
                                                    const std::string& chief,
                                                    const std::string& evaluator);

// What the report says for the console: "at step 6000: final accuracy 0.9087, loss 0.2571",
// "at step 6000; its model reported no final metrics (Session::ReportFinalMetrics)", or its
// error: "at step 6000: evaluate() failed: no test set in /data". A value shows 4 decimals, or 4
// significant digits when smaller than 0.001.
std::string DescribeReport(const job_report::JobReport& report);

}  // namespace taas::launcher
