/*===- mtrt.h - The megatron-mlir runtime's C API -----------------*- C -*-===//
 *
 * Train with a compiled artifact from any language that calls C (Python's
 * ctypes, for one). A trainer takes megatron-run's command line, so every
 * flag means what it means there; under mpirun each rank creates its own.
 * Every call that can fail returns a status: NULL when it succeeded, else
 * an object whose message names the file, the operation and the reason,
 * freed with mtrt_status_free. No C++ exception crosses this interface.
 * Use it from one thread; trainers may follow one another in a process
 * (MPI starts once and ends at exit), one at a time.
 *
 *===----------------------------------------------------------------------===*/

#ifndef MTRT_MTRT_H
#define MTRT_MTRT_H

#include <stdint.h>

#if defined(__GNUC__)
#define MTRT_API __attribute__((visibility("default")))
#else
#define MTRT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mtrt_status mtrt_status;
typedef struct mtrt_trainer mtrt_trainer;

/* The message of a failed call. */
MTRT_API const char *mtrt_status_message(const mtrt_status *status);
MTRT_API void mtrt_status_free(mtrt_status *status);

/* Loads and checks the artifact, agrees on the job with the other ranks,
 * creates the device and binds parameters, state and data: everything
 * megatron-run does before its first step. argv[0] is a program name,
 * argv[1] the artifact, the rest megatron-run's flags. */
MTRT_API mtrt_status *mtrt_trainer_create(int argc, char **argv,
                                          mtrt_trainer **out_trainer);
/* Runs the steps, then writes what the flags ask (--profile, --trace,
 * --save-params, --save); once per trainer. With several ranks a failure
 * ends all of them, as megatron-run does, since the others may wait in a
 * collective. */
MTRT_API mtrt_status *mtrt_trainer_train(mtrt_trainer *trainer);
/* The losses of the steps trained so far: *out_count of them, of which
 * the first `capacity` are written to `losses` (which may be NULL). */
MTRT_API mtrt_status *mtrt_trainer_losses(const mtrt_trainer *trainer,
                                          double *losses, int64_t capacity,
                                          int64_t *out_count);
/* The validation evaluations so far (--eval-interval, --skip-train):
 * *out_count of them, of which the first `capacity` are written, each as
 * the iteration it followed and its validation loss (either array may be
 * NULL). */
MTRT_API mtrt_status *mtrt_trainer_evaluations(const mtrt_trainer *trainer,
                                               int64_t *iterations,
                                               double *losses, int64_t capacity,
                                               int64_t *out_count);
MTRT_API void mtrt_trainer_destroy(mtrt_trainer *trainer);

/* megatron-run itself: its exit status. */
MTRT_API int mtrt_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif /* MTRT_MTRT_H */
