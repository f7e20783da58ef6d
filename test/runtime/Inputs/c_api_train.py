"""Trains through the runtime's C API (include/mtrt/mtrt.h) with ctypes.

usage: c_api_train.py LIBMTRT [--repeat N] [--compare-log LOG] ARTIFACT
                       [flags...]

Creates a trainer from megatron-run's command line, trains, and prints one
line per step, "loss STEP VALUE" (VALUE as %.9g), then one per validation
evaluation, "validation ITERATION VALUE" (mtrt_trainer_evaluations). With
--compare-log, the losses (and validation losses) must equal those
megatron-run logged for the same flags (one JSON object per step): it
prints "same losses as megatron-run: N steps" (and "same validation losses
as megatron-run: N evaluations") or the first difference and exits 1. With --repeat N, N trainers are created,
trained and destroyed one after another in this process (MPI starts once),
and each must train the same losses. With --then-signal NAME, the host
handles signal NAME itself from the start, raises it after its trainers are
gone, and its own handler must run (a trainer's --exit-signal-handler is
the session's, not the process's): it prints "the host's NAME handler is
back". A failed call prints
"error: MESSAGE" and exits 1. An argument @NULL is passed as a NULL
pointer.
"""

import ctypes
import json
import signal
import sys
import time


def main():
    lib = ctypes.CDLL(sys.argv[1])
    lib.mtrt_status_message.restype = ctypes.c_char_p
    lib.mtrt_status_message.argtypes = [ctypes.c_void_p]
    lib.mtrt_status_free.argtypes = [ctypes.c_void_p]
    for name in ("mtrt_trainer_create", "mtrt_trainer_train",
                 "mtrt_trainer_losses", "mtrt_trainer_evaluations"):
        getattr(lib, name).restype = ctypes.c_void_p
    lib.mtrt_trainer_destroy.argtypes = [ctypes.c_void_p]

    def check(status):
        if status:
            message = lib.mtrt_status_message(status).decode()
            lib.mtrt_status_free(status)
            print("error: " + message)
            sys.exit(1)

    rest = sys.argv[2:]
    repeat, compare, then_signal = 1, None, None
    if rest[:1] == ["--then-signal"]:
        then_signal, rest = rest[1], rest[2:]
        handled = []
        signal.signal(getattr(signal, then_signal),
                      lambda number, frame: handled.append(number))
    if rest[:1] == ["--repeat"]:
        repeat, rest = int(rest[1]), rest[2:]
    if rest[:1] == ["--compare-log"]:
        compare, rest = rest[1], rest[2:]
    args = [b"c_api_train"] + [None if a == "@NULL" else a.encode()
                               for a in rest]
    argv = (ctypes.c_char_p * (len(args) + 1))(*args, None)

    def train():
        trainer = ctypes.c_void_p()
        check(lib.mtrt_trainer_create(len(args), argv, ctypes.byref(trainer)))
        check(lib.mtrt_trainer_train(trainer))
        # A trainer trains once; asking again is an error, not a rerun.
        again = lib.mtrt_trainer_train(trainer)
        if not again:
            print("a second mtrt_trainer_train succeeded")
            sys.exit(1)
        lib.mtrt_status_free(again)
        # Fewer slots than steps: the count, and only that many written.
        total, first = ctypes.c_int64(), (ctypes.c_double * 1)(-1.0)
        check(lib.mtrt_trainer_losses(trainer, first, ctypes.c_int64(1),
                                      ctypes.byref(total)))
        count = ctypes.c_int64()
        check(lib.mtrt_trainer_losses(trainer, None, ctypes.c_int64(0),
                                      ctypes.byref(count)))
        values = (ctypes.c_double * count.value)()
        check(lib.mtrt_trainer_losses(trainer, values, count,
                                      ctypes.byref(count)))
        evaluated = ctypes.c_int64()
        check(lib.mtrt_trainer_evaluations(trainer, None, None,
                                           ctypes.c_int64(0),
                                           ctypes.byref(evaluated)))
        iterations = (ctypes.c_int64 * evaluated.value)()
        validation = (ctypes.c_double * evaluated.value)()
        check(lib.mtrt_trainer_evaluations(trainer, iterations, validation,
                                           evaluated, ctypes.byref(evaluated)))
        evaluations.append(list(zip(iterations, validation)))
        lib.mtrt_trainer_destroy(trainer)
        if total.value != count.value or \
                (count.value > 0 and first[0] != values[0]):
            print("mtrt_trainer_losses with one slot: %d, %r" %
                  (total.value, first[0]))
            sys.exit(1)
        return list(values)

    evaluations = []
    losses = train()
    for attempt in range(1, repeat):
        again = train()
        if again != losses:
            print("trainer %d trained %s, the first %s"
                  % (attempt + 1, again, losses))
            sys.exit(1)
    if repeat > 1:
        print("%d trainers in one process: the same losses" % repeat)
    if then_signal:
        signal.raise_signal(getattr(signal, then_signal))
        time.sleep(0.1)  # Python runs its handlers between bytecodes
        if not handled:
            print("%s raised, and the host's handler did not run" % then_signal)
            sys.exit(1)
        print("the host's %s handler is back" % then_signal)
    for step, loss in enumerate(losses, start=1):
        print("loss %d %.9g" % (step, loss))
    for iteration, loss in evaluations[0]:
        print("validation %d %.9g" % (iteration, loss))
    if compare:
        logged = [json.loads(line)["loss"] for line in open(compare)]
        if len(logged) != len(losses):
            print("megatron-run logged %d steps, the C API trained %d"
                  % (len(logged), len(losses)))
            sys.exit(1)
        for step, (a, b) in enumerate(zip(losses, logged), start=1):
            if b is None or abs(a - b) > 1e-7 * abs(b):
                print("step %d: C API %.9g, megatron-run %.9g" % (step, a, b))
                sys.exit(1)
        print("same losses as megatron-run: %d steps" % len(losses))
        logged = [(row["step"], row["validation_loss"])
                  for row in map(json.loads, open(compare))
                  if "validation_loss" in row]
        for (step, b), (iteration, a) in zip(logged, evaluations[0]):
            if step != iteration or abs(a - b) > 1e-7 * abs(b):
                print("evaluation: C API %d %.9g, megatron-run %d %.9g"
                      % (iteration, a, step, b))
                sys.exit(1)
        if len(logged) != len(evaluations[0]):
            print("megatron-run logged %d evaluations, the C API ran %d"
                  % (len(logged), len(evaluations[0])))
            sys.exit(1)
        if logged:
            print("same validation losses as megatron-run: %d evaluations"
                  % len(logged))


if __name__ == "__main__":
    main()
