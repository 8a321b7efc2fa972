// Model + optimizer state to and from HDF5, so that a restored run continues bit-identically.
// Layout: /params/<name>, /adam/m/<name>, /adam/v/<name> (double), attribute adam_step, and any
// named integer vectors the caller adds (the training loop stores its RNG states and step there).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "nn/optim/adamw.h"
#include "nn/position_hooks.h"

namespace lexp {

// What the caller stores beside the model and optimizer (step, RNG states, training history).
struct CheckpointExtras {
  std::map<std::string, std::vector<int64_t>> ints;
  std::map<std::string, std::vector<double>> doubles;
};

template <typename S>
void SaveCheckpoint(const std::string& path, const std::vector<ParamRef<S>>& params, AdamW<S>& opt,
                    const CheckpointExtras& extra) {
  h5::Writer w(path);
  h5::Group params_g = w.root().CreateGroup("params");
  h5::Group adam = w.root().CreateGroup("adam");
  h5::Group m = adam.CreateGroup("m"), v = adam.CreateGroup("v");
  adam.SetAttr("adam_step", static_cast<int64_t>(opt.step_count()));
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    std::vector<double> vals(p.value, p.value + p.size);
    params_g.WriteDoubles(p.name, vals, p.shape, p.axes);
    m.WriteDoubles(p.name, opt.first_moments()[i], p.shape, p.axes);
    v.WriteDoubles(p.name, opt.second_moments()[i], p.shape, p.axes);
  }
  h5::Group ex = w.root().CreateGroup("extra");
  for (const auto& [k, vec] : extra.ints) ex.WriteInts("i_" + k, vec, {vec.size()}, "element");
  for (const auto& [k, vec] : extra.doubles)
    ex.WriteDoubles("d_" + k, vec, {vec.size()}, "element");
  w.Commit();
}

template <typename S>
CheckpointExtras LoadCheckpoint(const std::string& path, const std::vector<ParamRef<S>>& params,
                                AdamW<S>& opt) {
  h5::Reader r(path);
  h5::Group params_g = r.root().OpenGroup("params");
  h5::Group adam = r.root().OpenGroup("adam");
  h5::Group m = adam.OpenGroup("m"), v = adam.OpenGroup("v");
  opt.Attach(params);
  opt.set_step_count(adam.AttrInt("adam_step"));
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    // A checkpoint of another model (or a damaged one) is the user's input, not a lexp bug.
    LEXP_INPUT_CHECK(params_g.Has(p.name),
                     "file '" + path + "': the checkpoint has no parameter " + p.name);
    // The optimizer steps every moment element-wise against the parameter, so both must match it:
    // the parameter's shape, or flat of its size (format 1 stored every tensor flat).
    const std::vector<uint64_t> shape = params_g.Dims(p.name).size() == 1
                                            ? std::vector<uint64_t>{static_cast<uint64_t>(p.size)}
                                            : p.shape;
    std::vector<double> vals = params_g.ReadDoublesShaped(p.name, shape);
    for (long j = 0; j < p.size; ++j) p.value[j] = static_cast<S>(vals[j]);
    opt.first_moments()[i] = m.ReadDoublesShaped(p.name, shape);
    opt.second_moments()[i] = v.ReadDoublesShaped(p.name, shape);
  }
  CheckpointExtras extra;
  h5::Group ex = r.root().OpenGroup("extra");
  for (const auto& name : ex.Children()) {
    if (name.rfind("i_", 0) == 0) extra.ints[name.substr(2)] = ex.ReadInts(name);
    if (name.rfind("d_", 0) == 0) extra.doubles[name.substr(2)] = ex.ReadDoubles(name);
  }
  return extra;
}

}  // namespace lexp
