/*
 * simulate.h
 *	  The simulated device (--simulate PROFILE.json): the worker keeps its
 *	  real protocol, queueing, batching, residency and eviction, but a
 *	  model "computes" by sleeping for the time the profile gives for its
 *	  batch size, and "loads" by sleeping its size over the profile's load
 *	  bandwidth, so that a cluster of GPUs can be simulated on a few cores
 *	  (bench/placement).  Only the compute and load steps know.
 *
 * The profile (docs/operations.md, "Simulated device"):
 *
 *	  {
 *		"load_bandwidth": 2.0e9,	  bytes per second a load moves
 *		"output_values": 8,			  floats per row of predict/embed
 *		"models": {
 *		  "det.onnx": {"bytes": 1500000000,
 *					   "compute_ms": [[1, 20], [8, 60], [32, 200]]},
 *		  ...
 *		}
 *	  }
 *
 * compute_ms lists [batch size, milliseconds] pairs; a batch between two
 * listed sizes takes the linear interpolation, one below the smallest
 * takes the smallest's time, one above the largest its time scaled by
 * rows.  Unknown keys are ignored.  A model not in the profile is a
 * missing model file (58P01).
 *
 * Results are placeholders that say which row they answer: text (OCR,
 * classify) "sim:MODEL:HASH" and json (detect_text) {"sim":"MODEL:HASH"},
 * MODEL the name of the fragment's last model (its file when unnamed; the
 * row's own request's fragment in a merged run) and
 * HASH the first 16 hex digits of the row's SHA-256; predict and
 * embed_text rows get output_values zeros.
 *
 * Threading: a profile is read-only after sim_profile_load(); sim_run()
 * may run on any one thread at a time per model cache.
 */
#ifndef INFER_SIMULATE_H
#define INFER_SIMULATE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "common/pg_infer.pb-c.h"
#include "worker/fragment.h"
#include "worker/model_cache.h"
#include "worker/state.h"

typedef struct sim_profile sim_profile;

/* Largest profile file read. */
#define SIM_MAX_PROFILE_BYTES (1 << 20)
/* Most models and [batch, ms] points per model in a profile. */
#define SIM_MAX_MODELS 256
#define SIM_MAX_POINTS 64

/* Reads and checks the profile at path; NULL with err naming what is wrong. */
sim_profile *sim_profile_load(const char *path, char *err, size_t errlen);

/* Frees *p; sets *p to NULL. */
void		sim_profile_destroy(sim_profile **p);

/* Number of models in the profile. */
int			sim_profile_n_models(const sim_profile *p);

/*
 * Simulated compute milliseconds of model file for a batch of rows, or -1
 * when the profile does not have the file.
 */
double		sim_profile_compute_ms(const sim_profile *p, const char *file, int rows);

/*
 * Makes mc load through the profile (a model_loader whose load sleeps
 * bytes / load_bandwidth) and declares the profile's models to it.
 */
void		sim_attach(sim_profile *p, model_cache *mc);

/*
 * The simulated fragment_run(): same arguments and result shape (see
 * fragment.h), rows answered with placeholders.  Each model of each stage
 * is acquired (loaded when not resident) and then sleeps its time for
 * each call of at most max_batch rows; every call is appended to
 * samples[0..max_samples) (*n_samples counts them) for the timings.
 * row_runs (NULL: run for every row) gives, per row, the request it came
 * from, whose fragments name the row's placeholder (a merged run's
 * requests may name their models differently, request_group_key).
 */
int			sim_run(sim_profile *p, model_cache *mc, const Pginfer__RunFragment *run,
					const Pginfer__RunFragment *const *row_runs,
					const void *const *rows, const size_t *rows_len, int n_rows,
					int max_batch, volatile sig_atomic_t *stop,
					state_sample *samples, int max_samples, int *n_samples,
					fragment_result **out, const char **sqlstate, char *err,
					size_t errlen);

#endif							/* INFER_SIMULATE_H */
