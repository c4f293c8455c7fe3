// The UI server's single door to the shared TFJob rules (taas::tfjob): parse, default and
// validate a TFJob object, returning every problem with its field path. No rule lives here.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "taas/ui_server/job_form.h"

namespace taas::ui_server {

std::vector<FieldError> CheckTfJobRules(const nlohmann::json& tfjob);

}  // namespace taas::ui_server
