// The front end's TypeScript types for the UI's API (web-ui/src/api_types.ts), written from their
// one definition on the server: each row's field list (rows.h, metrics.h) and the New-job form's
// table (job_form.h). `taas-ui-api-types` writes or checks that file; the test web_ui_api_types
// and the front end's build fail while the file differs, so a field renamed on one side breaks the
// build of the other.
#pragma once

#include <string>

namespace taas::ui_server {

// The whole file, as committed.
std::string ApiTypeScript();

}  // namespace taas::ui_server
