// Task registry: recipe name -> task.
#include <string>

#include "experiments/tasks/associative_recall.h"
#include "experiments/tasks/string_tasks.h"
#include "experiments/tasks/task.h"
#include "nn/check.h"

namespace lexp {

const std::vector<TaskInfo>& ListTasks() {
  static const std::vector<TaskInfo> kList = {
      {"copy", "copy n random tokens from a pool of `vocab` (default 100)",
       "Kazemnejad et al. 2023 (cmc)"},
      {"reverse_string", "reverse n random bits", "Deletang et al. 2023"},
      {"duplicate_string", "write n random bits twice", "Deletang et al. 2023"},
      {"parity_check", "parity of n random bits (one output)", "Deletang et al. 2023"},
      {"associative_recall", "n key-value pairs, then each key queried; vocab default 128",
       "Arora et al. 2023 (Zoology MQAR, simplified)"},
  };
  return kList;
}

std::unique_ptr<Task> CreateTask(const std::string& name, const TaskOptions& o) {
  if (name == "copy") return std::make_unique<CopyTask>(o.vocab);
  if (name == "reverse_string") return std::make_unique<ReverseStringTask>();
  if (name == "duplicate_string") return std::make_unique<DuplicateStringTask>();
  if (name == "parity_check") return std::make_unique<ParityCheckTask>();
  if (name == "associative_recall") return std::make_unique<AssociativeRecallTask>(o.vocab);
  std::string known;
  for (const auto& t : ListTasks()) known += (known.empty() ? "" : ", ") + t.name;
  FailInput("unknown task '" + name + "'; known tasks: " + known);
}

}  // namespace lexp
