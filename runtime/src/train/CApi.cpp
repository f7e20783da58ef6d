//===- CApi.cpp - The runtime's C API over the training run ---------------===//

#include "mtrt/mtrt.h"

#include "train/Run.h"

#include <cstdio>
#include <exception>
#include <new>
#include <string>

using namespace mtrt::train;

struct mtrt_status {
  std::string message;
};

struct mtrt_trainer {
  Session session;
  bool trained = false;
};

namespace {
/// What a status is when even it cannot be allocated; never freed.
mtrt_status outOfMemory{"out of memory"};

mtrt_status *makeStatus(std::string message) {
  mtrt_status *status = new (std::nothrow) mtrt_status{std::move(message)};
  return status ? status : &outOfMemory;
}

/// The status of a call that returned `code`: NULL for 0, else the error
/// the run reported.
mtrt_status *statusOf(int code, const char *operation) {
  if (code == 0)
    return nullptr;
  std::string text = lastErrorText();
  // Rank 0 reports what every rank sees alike, and a rank what only it
  // saw; the others know only that the run failed.
  return makeStatus(std::string(operation) + ": " +
                    (text.empty()
                         ? "failed (exit status " + std::to_string(code) +
                               "; another rank reports the error)"
                         : text));
}

/// Runs `body` (returning an exit code) with no exception escaping.
template <typename Body>
mtrt_status *guarded(const char *operation, Body body) {
  try {
    return statusOf(body(), operation);
  } catch (const std::exception &error) {
    return makeStatus(std::string(operation) + ": " + error.what());
  } catch (...) {
    return makeStatus(std::string(operation) + ": unknown exception");
  }
}
} // namespace

extern "C" {

const char *mtrt_status_message(const mtrt_status *status) {
  return status ? status->message.c_str() : "ok";
}

void mtrt_status_free(mtrt_status *status) {
  if (status != &outOfMemory)
    delete status;
}

mtrt_status *mtrt_trainer_create(int argc, char **argv,
                                 mtrt_trainer **out_trainer) {
  if (!out_trainer)
    return makeStatus("mtrt_trainer_create: out_trainer is NULL");
  *out_trainer = nullptr;
  if (argc < 2 || !argv)
    return makeStatus("mtrt_trainer_create: argv must hold a program name "
                      "and the artifact");
  lastErrorText().clear();
  auto *trainer = new (std::nothrow) mtrt_trainer;
  if (!trainer)
    return makeStatus("mtrt_trainer_create: out of memory");
  mtrt_status *status = guarded("mtrt_trainer_create", [&] {
    return openSession(argc, argv, trainer->session);
  });
  if (!status && trainer->session.helpOnly)
    status = makeStatus("mtrt_trainer_create: --help asks for the usage, "
                        "not a trainer:\n" +
                        usageText());
  if (!status && trainer->session.reportOnly)
    status = makeStatus("mtrt_trainer_create: --memory-report reports the "
                        "plan and trains nothing");
  if (status) {
    delete trainer;
    return status;
  }
  *out_trainer = trainer;
  return nullptr;
}

mtrt_status *mtrt_trainer_train(mtrt_trainer *trainer) {
  if (!trainer)
    return makeStatus("mtrt_trainer_train: trainer is NULL");
  if (trainer->trained)
    return makeStatus("mtrt_trainer_train: this trainer has trained its "
                      "steps already; create another to train again");
  trainer->trained = true;
  lastErrorText().clear();
  return guarded("mtrt_trainer_train",
                 [&] { return runSession(trainer->session); });
}

mtrt_status *mtrt_trainer_losses(const mtrt_trainer *trainer, double *losses,
                                 int64_t capacity, int64_t *out_count) {
  if (!trainer || !out_count)
    return makeStatus("mtrt_trainer_losses: trainer or out_count is NULL");
  const std::vector<double> &all = trainer->session.trainer->losses();
  *out_count = int64_t(all.size());
  for (int64_t i = 0; losses && i < capacity && i < *out_count; ++i)
    losses[i] = all[size_t(i)];
  return nullptr;
}

mtrt_status *mtrt_trainer_evaluations(const mtrt_trainer *trainer,
                                      int64_t *iterations, double *losses,
                                      int64_t capacity, int64_t *out_count) {
  if (!trainer || !out_count)
    return makeStatus("mtrt_trainer_evaluations: trainer or out_count is NULL");
  const std::vector<std::pair<int64_t, double>> &all =
      trainer->session.trainer->evaluations();
  *out_count = int64_t(all.size());
  for (int64_t i = 0; i < capacity && i < *out_count; ++i) {
    if (iterations)
      iterations[i] = all[size_t(i)].first;
    if (losses)
      losses[i] = all[size_t(i)].second;
  }
  return nullptr;
}

void mtrt_trainer_destroy(mtrt_trainer *trainer) { delete trainer; }

int mtrt_main(int argc, char **argv) {
  try {
    return runMegatron(argc, argv);
  } catch (const std::exception &error) {
    std::fprintf(stderr, "megatron-run: error: %s\n", error.what());
    return 1;
  } catch (...) {
    std::fprintf(stderr, "megatron-run: error: unknown exception\n");
    return 1;
  }
}

} // extern "C"
