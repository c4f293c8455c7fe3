// A model for the exit-code tests that fails on request: `-- --fail=<hook> --how=<way>` makes
// <hook> (factory, build_model, get_init_fn, init_fn, train, after_train, evaluate) fail by
// throwing a std::exception (--how=throw, the default), throwing something else (--how=int) or
// with an error Status (--how=status: returned by build_model, the init fn and evaluate, set in
// StepResult::error by train). --fail_at=N fails train() only at local step N. Without --fail it
// trains one variable towards 1 and evaluates.
#include <stdexcept>
#include <string>

#include "taas/runtime/dist_model.h"

namespace {

struct Fault {
  std::string hook;
  std::string how = "throw";
  std::int64_t at = 0;
};

// The arguments after `--`, read before the model exists so that the factory can fail too.
Fault ParseFault(int argc, char** argv) {
  Fault fault;
  bool model_args = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") model_args = true;
    if (!model_args) continue;
    if (arg.rfind("--fail=", 0) == 0) fault.hook = arg.substr(7);
    if (arg.rfind("--how=", 0) == 0) fault.how = arg.substr(6);
    if (arg.rfind("--fail_at=", 0) == 0) fault.at = std::stoll(arg.substr(10));
  }
  return fault;
}

// Fails as asked when `hook` is the faulty one; an OK status otherwise.
absl::Status MaybeFail(const Fault& fault, const std::string& hook) {
  if (fault.hook != hook) return absl::OkStatus();
  if (fault.how == "int") throw 7;
  std::string message = "injected failure in ";
  message += hook;
  if (fault.how == "status") return absl::DataLossError(message);
  throw std::runtime_error(message);
}

class FaultyModel : public taas::DistModel {
 public:
  explicit FaultyModel(Fault fault) : fault_(std::move(fault)) {}

  absl::Status build_model(taas::ModelBuilder& builder) override {
    w_.name = "faulty_model/weight";
    w_.value = taas::Tensor({1});
    w_.gradient = taas::Tensor({1});
    builder.AddVariable(&w_);
    builder.SetBatchSize(1);
    return MaybeFail(fault_, "build_model");
  }

  taas::InitFn get_init_fn() override {
    (void)MaybeFail(fault_, "get_init_fn");
    return [this](taas::Session&) { return MaybeFail(fault_, "init_fn"); };
  }

  taas::StepResult train(taas::Session& session) override {
    taas::StepResult result;
    if (fault_.at == 0 || session.local_step() + 1 == fault_.at) {
      result.error = MaybeFail(fault_, "train");
    }
    w_.gradient.data()[0] = w_.value.data()[0] - 1.0f;
    return result;
  }

  absl::StatusOr<std::map<std::string, double>> evaluate(taas::Session&) override {
    TAAS_RETURN_IF_ERROR(MaybeFail(fault_, "evaluate"));
    return std::map<std::string, double>{{"w", w_.value.data()[0]}};
  }

  void after_train(taas::Session&, bool) override { (void)MaybeFail(fault_, "after_train"); }

 private:
  Fault fault_;
  taas::Variable w_;
};

}  // namespace

int main(int argc, char** argv) {
  const Fault fault = ParseFault(argc, argv);
  return taas::RunMain(argc, argv, [fault]() -> std::unique_ptr<taas::DistModel> {
    (void)MaybeFail(fault, "factory");
    return std::make_unique<FaultyModel>(fault);
  });
}
