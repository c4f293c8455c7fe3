// A model's own arguments (TrainerInfo::args: what follows `--` in a manifest's args), read with
// the parser of taas's own command lines (taas/flags/flags.h), so a model's flags are spelled and
// refused as the runtime's and the CLIs' are:
//
//   taas::flags::FlagSet flags;
//   flags.Int("batch_size", 1, 65536, &options.batch_size);
//   flags.Double("l2", 0, 1, &options.l2);
//   TAAS_RETURN_IF_ERROR(taas::ParseModelArgs(flags, builder.info().args));
//
// Spellings: `--name=VALUE`, `--name VALUE`, a switch `--name` or `--name=true|false`.
#pragma once

#include <string>
#include <vector>

#include "taas/base/status.h"
#include "taas/flags/flags.h"

namespace taas {

// Parses `args` into the places `flags` declares. InvalidArgument "model arguments: <the parser's
// error>" ("model arguments: --batch_size: expected a number from 1 to 65536, got 0") for an
// unknown or malformed flag, and for what a model cannot take: a positional argument, --help.
absl::Status ParseModelArgs(const flags::FlagSet& flags, const std::vector<std::string>& args);

}  // namespace taas
