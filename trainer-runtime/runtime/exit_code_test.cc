#include "exit_code.h"

#include <doctest/doctest.h>

#include <stdexcept>

#include "taas/base/fence.h"

namespace taas::runtime {
namespace {

using absl::StatusCode;

// Every absl code, so that a code added to ps::IsTransient shows up here.
const StatusCode kAllCodes[] = {
    StatusCode::kCancelled,        StatusCode::kUnknown,           StatusCode::kInvalidArgument,
    StatusCode::kDeadlineExceeded, StatusCode::kNotFound,          StatusCode::kAlreadyExists,
    StatusCode::kPermissionDenied, StatusCode::kResourceExhausted, StatusCode::kFailedPrecondition,
    StatusCode::kAborted,          StatusCode::kOutOfRange,        StatusCode::kUnimplemented,
    StatusCode::kInternal,         StatusCode::kUnavailable,       StatusCode::kDataLoss,
    StatusCode::kUnauthenticated};

absl::Status Of(StatusCode code) { return absl::Status(code, "x"); }

TEST_CASE("configuration, model and data failures are permanent whatever their code") {
  for (StatusCode code : kAllCodes) {
    CAPTURE(code);
    CHECK(ExitCodeFor(FailureSource::kConfig, Of(code)) == kExitBadConfig);
    CHECK(ExitCodeFor(FailureSource::kModel, Of(code)) == kExitModelError);
    CHECK(ExitCodeFor(FailureSource::kData, Of(code)) == kExitModelError);
  }
}

TEST_CASE("a peer's failure is transient only when the peer is lost or a call timed out") {
  for (StatusCode code : kAllCodes) {
    CAPTURE(code);
    int expected = kExitModelError;
    if (code == StatusCode::kUnavailable || code == StatusCode::kDeadlineExceeded ||
        code == StatusCode::kCancelled || code == StatusCode::kAborted) {
      expected = kExitTransient;
    } else if (code == StatusCode::kUnauthenticated || code == StatusCode::kPermissionDenied) {
      expected = kExitBadConfig;
    }
    CHECK(ExitCodeFor(FailureSource::kPeer, Of(code)) == expected);
  }
}

TEST_CASE("a wait that gave up and a server that cannot listen are transient") {
  for (StatusCode code : kAllCodes) {
    CHECK(ExitCodeFor(FailureSource::kWait, Of(code)) == kExitTransient);
    CHECK(ExitCodeFor(FailureSource::kServer, Of(code)) == kExitTransient);
  }
}

TEST_CASE("a replica ended by SIGTERM exits transient, so the job comes back from its checkpoint") {
  for (StatusCode code : kAllCodes) {
    CHECK(ExitCodeFor(FailureSource::kTerminated, Of(code)) == kExitTransient);
  }
}

TEST_CASE("a fencing refusal exits fenced from wherever it came, and permanently") {
  const absl::Status fenced = CheckIncarnation("worker-1", 4, 3);
  for (FailureSource source : {FailureSource::kPeer, FailureSource::kWait, FailureSource::kServer,
                               FailureSource::kTerminated}) {
    CHECK(ExitCodeFor(source, fenced) == kExitFenced);
  }
  // A refusal of another kind with the same code is the PS's usual answer.
  CHECK(ExitCodeFor(FailureSource::kPeer, Of(StatusCode::kFailedPrecondition)) == kExitModelError);
  CHECK(kExitFenced < 128);
}

TEST_CASE("permanent codes are 1..127 and the transient one is >= 128") {
  for (int code : {kExitBadConfig, kExitModelError}) {
    CHECK(code >= 1);
    CHECK(code <= 127);
  }
  CHECK(kExitTransient >= 128);
  CHECK(kExitTransient <= 255);
}

TEST_CASE("an exception from model code becomes a status naming the hook") {
  absl::Status s = CallModel("train()", []() -> absl::Status {
    throw std::invalid_argument("label 10 at row 3 is outside [0, 10)");
  });
  CHECK(s.code() == StatusCode::kInternal);
  CHECK(s.message() == "train() threw: label 10 at row 3 is outside [0, 10)");

  s = CallModel("evaluate()", []() -> absl::Status { throw 42; });
  CHECK(s.message() == "evaluate() threw something that is not a std::exception");

  s = CallModel("build_model()", []() -> absl::Status { throw std::bad_alloc(); });
  CHECK(s.code() == StatusCode::kResourceExhausted);
  CHECK(ExitCodeFor(FailureSource::kModel, s) == kExitModelError);
}

TEST_CASE("a status the model returned passes through unchanged") {
  absl::Status s = CallModel("build_model()", [] { return absl::UnavailableError("no data"); });
  CHECK(s == absl::UnavailableError("no data"));
  // Even a code that means "peer lost" from the PS is the model's failure here.
  CHECK(ExitCodeFor(FailureSource::kModel, s) == kExitModelError);
  CHECK(CallModel("train()", [] { return absl::OkStatus(); }).ok());
}

TEST_CASE("the exit line names the cause, the step and the code, on one line") {
  std::FILE* out = std::tmpfile();
  REQUIRE(out != nullptr);
  Logger logger = Logger(out).With({{"job", "mnist"}, {"role", "worker"}, {"index", 1}});
  const int code = Exit(logger, 120, FailureSource::kModel, "train() failed",
                        absl::InternalError("train() threw: bad\nlabel"));
  CHECK(code == kExitModelError);
  std::rewind(out);
  char buffer[4096] = {};
  const std::size_t n = std::fread(buffer, 1, sizeof(buffer) - 1, out);
  std::fclose(out);
  const std::string line(buffer, n);
  CHECK(line.find('\n') == line.size() - 1);
  CHECK(line.find("level=error") != std::string::npos);
  CHECK(line.find("msg=\"exiting: train() failed\"") != std::string::npos);
  CHECK(line.find("job=mnist") != std::string::npos);
  CHECK(line.find("role=worker") != std::string::npos);
  CHECK(line.find("step=120") != std::string::npos);
  CHECK(line.find("exit_code=3") != std::string::npos);
  CHECK(line.find("transient=false") != std::string::npos);
}

}  // namespace
}  // namespace taas::runtime
