#include "taas/ui_server/tfjob_rules.h"

#include "taas/tfjob/defaults.h"
#include "taas/tfjob/serialization.h"
#include "taas/tfjob/validation.h"

namespace taas::ui_server {

std::vector<FieldError> CheckTfJobRules(const nlohmann::json& tfjob) {
  auto parsed = tfjob::TFJobFromJson(tfjob);
  if (!parsed.ok()) {
    return {
        {tfjob::ErrorField(parsed.status()).value_or(""), std::string(parsed.status().message())}};
  }
  tfjob::SetDefaults(*parsed);
  std::vector<FieldError> errors;
  for (const tfjob::FieldError& e : tfjob::Validate(*parsed)) {
    errors.push_back({e.field, e.field + " " + e.message});
  }
  return errors;
}

}  // namespace taas::ui_server
