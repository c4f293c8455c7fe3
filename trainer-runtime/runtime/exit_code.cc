#include "exit_code.h"

#include <new>

#include "taas/base/fence.h"
#include "taas/ps/client.h"

namespace taas::runtime {

int ExitCodeFor(FailureSource source, const absl::Status& status) {
  if (IsFenced(status)) return kExitFenced;
  switch (source) {
    case FailureSource::kConfig:
      return kExitBadConfig;
    case FailureSource::kModel:
    case FailureSource::kData:
      return kExitModelError;
    case FailureSource::kPeer:
      if (ps::IsTransient(status)) return kExitTransient;
      if (status.code() == absl::StatusCode::kUnauthenticated ||
          status.code() == absl::StatusCode::kPermissionDenied) {
        return kExitBadConfig;
      }
      return kExitModelError;
    case FailureSource::kWait:
    case FailureSource::kServer:
    case FailureSource::kTerminated:
      return kExitTransient;
  }
  return kExitModelError;
}

absl::Status StatusFromCurrentException(std::string_view hook) {
  const std::string where(hook);
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(where + " ran out of memory (std::bad_alloc)");
  } catch (const std::exception& e) {
    return absl::InternalError(where + " threw: " + e.what());
  } catch (...) {
    return absl::InternalError(where + " threw something that is not a std::exception");
  }
}

absl::Status CallModel(std::string_view hook, const std::function<absl::Status()>& body) {
  try {
    return body();
  } catch (...) {
    return StatusFromCurrentException(hook);
  }
}

absl::StatusOr<std::map<std::string, double>> EvaluateModel(DistModel& model, Session& session) {
  absl::StatusOr<std::map<std::string, double>> metrics;
  TAAS_RETURN_IF_ERROR(CallModel("evaluate()", [&] {
    metrics = model.evaluate(session);
    return absl::OkStatus();
  }));
  return metrics;
}

int Exit(const Logger& logger, std::int64_t global_step, FailureSource source,
         std::string_view cause, const absl::Status& status) {
  const int code = ExitCodeFor(source, status);
  const std::string said = code == kExitFenced
                               ? "fenced: a newer incarnation of this replica replaced it"
                               : std::string(cause);
  logger.Log(source == FailureSource::kTerminated ? LogLevel::kWarning : LogLevel::kError,
             "exiting: " + said,
             {{"step", global_step},
              {"exit_code", code},
              {"transient", code >= kExitTransient},
              {"error", std::string(status.message())}});
  return code;
}

}  // namespace taas::runtime
