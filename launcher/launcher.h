// `taas run job.yaml`: runs a TFJob on this machine, one process per replica, with the TF_CONFIG
// the operator would inject (addresses are 127.0.0.1 with free ports). Restart decisions and the
// job status come from the TFJob rules library (taas::tfjob), exactly as in the operator.
//
// The parts: args.h (the command line), replica_env.h (each replica's command, ports and
// environment), processes.h (process supervision), job_loop.h (the job loop's decisions), and
// launcher.cc, which runs one job with them and serves its web UI.
#pragma once

#include "args.h"

namespace taas::launcher {

// Runs the job to completion (serving the web UI meanwhile unless options.ui is false); returns
// the process exit code (0 when the job succeeded, 1 when it failed, 2 for a manifest or setup
// error, 128 + the signal when SIGINT (130) or SIGTERM (143) interrupted it while the job ran).
// Every process of every replica is gone when it returns (ProcessTable::Reap, JobLoop::StopAll).
int Run(const Options& options);

}  // namespace taas::launcher
