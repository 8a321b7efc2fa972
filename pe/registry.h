// Creates an encoding from its recipe name and options. Adding an encoding takes an EncodingInfo in
// ListEncodings() (name, family, sites, paper, options) and a branch in CreateEncoding that builds
// it (registry.cc).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nn/check.h"
#include "nn/position_hooks.h"
#include "pe/options.h"

namespace lexp {

struct EncodingInfo {
  std::string name;
  std::string family;  // absolute / relative bias / rotary / none
  std::string sites;   // hook sites it uses
  std::string paper;
  std::vector<OptionSpec> options;
  // Empty when the encoding can show a key at a distance other than its own (it reads the
  // pattern's effective distance, or recomputes the logit at it, as rope does), as LM-Infinite's
  // Lambda mask and StreamingLLM's sinks need; otherwise why it cannot (the patterns would be
  // masks only).
  std::string cannot_remap = "";
};

const std::vector<EncodingInfo>& ListEncodings();
const EncodingInfo& FindEncoding(const std::string& name);  // error lists the known names

template <typename S>
std::unique_ptr<PositionEncoding<S>> CreateEncoding(
    const std::string& name, const std::map<std::string, std::string>& options,
    const EncodingShape& shape);

}  // namespace lexp
