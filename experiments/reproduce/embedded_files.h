// The text of every recipe (experiments/recipes/*.toml) and claim file
// (experiments/reproductions/*.toml), embedded by CMake at configure time (the generated
// embedded_files.cc), so that `lexp reproduce` needs no checkout beside the binary.
#pragma once

#include <string>
#include <vector>

namespace lexp {

struct EmbeddedFile {
  std::string name;  // the file name without .toml
  std::string text;
};

const std::vector<EmbeddedFile>& EmbeddedRecipes();
const std::vector<EmbeddedFile>& EmbeddedReproductions();

}  // namespace lexp
