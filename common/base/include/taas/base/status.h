// Errors cross module boundaries as values: absl::Status and absl::StatusOr<T>. Exceptions from
// libraries that throw (yaml-cpp, nlohmann::json) are caught at the module edge and converted.
#pragma once

#include <absl/status/status.h>
#include <absl/status/statusor.h>

// Returns early from the enclosing function when `expr` (an absl::Status) is not OK.
#define TAAS_RETURN_IF_ERROR(expr)                                                     \
  do {                                                                                 \
    if (::absl::Status taas_status_ = (expr); !taas_status_.ok()) return taas_status_; \
  } while (false)

#define TAAS_STATUS_CONCAT_INNER(a, b) a##b
#define TAAS_STATUS_CONCAT(a, b) TAAS_STATUS_CONCAT_INNER(a, b)

// `TAAS_ASSIGN_OR_RETURN(auto value, Compute());` unwraps a StatusOr or returns its error.
#define TAAS_ASSIGN_OR_RETURN(lhs, expr) \
  TAAS_ASSIGN_OR_RETURN_IMPL(TAAS_STATUS_CONCAT(taas_statusor_, __LINE__), lhs, expr)
#define TAAS_ASSIGN_OR_RETURN_IMPL(statusor, lhs, expr)    \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()
