/* kiln interface "kiln.ik/1": batched inverse kinematics of one serial chain.
 *
 * A plugin offering this interface solves inverse kinematics for one kinematic chain (a robot
 * from a base link to a tip link, fixed when the plugin was built, e.g. from a URDF): given a
 * batch of 6-D pose targets of the tip in the base frame, it returns one joint vector per target
 * together with its remaining position and orientation error and whether it converged.
 *
 * Conventions
 *   - Units: metres, radians. Poses are KILN_IK_POSE_SIZE (7) floats: position x y z, then the
 *     unit quaternion w x y z (Hamilton convention, rotating tip-frame vectors into the base
 *     frame). The solver normalises target quaternions; q and -q are the same target.
 *   - Joint vectors are dof floats in chain order (base to tip); batches are row-major
 *     (target i's joints at [i * dof, (i + 1) * dof)).
 *   - Position error: |p_target - p_tip| in metres. Orientation error: the angle in [0, pi] of
 *     the rotation taking the tip's orientation to the target's, in radians.
 *
 * Threads (see ../plugin.h). An instance serves one control thread: the functions marked
 * [control-thread: real-time safe] are never called concurrently with one another on the same
 * instance (use one instance per control thread). [any-thread] functions may run concurrently
 * with anything, including a solve in flight.
 *
 * Lifecycle. info, joint_info and fk work right after create (no activate, no device). The
 * solve functions need activate:
 *   - activate(device_ordinal >= 0, max_batch): selects the device, creates the plugin's own
 *     stream and completion event, reserves device buffers for max_batch targets and pinned host
 *     staging buffers, and loads the solver kernel (a missing or wrong kernel image fails here).
 *   - activate(-1, max_batch): host only. The same algorithm runs on the calling thread's CPU
 *     (for tests and device-less machines; far slower). KILN_IK_MEMORY_DEVICE is refused.
 * Every buffer a solve uses is reserved at activate for max_batch targets; a larger batch is
 * KILN_ERR_CAPACITY, never an allocation.
 *
 * Solving. A real-time controller typically does, once per cycle:
 *     ik->solve_async(instance, &problem, &result, msg, size);  // enqueue, returns at once
 *     ... other work ...
 *     if (ik->poll(instance) == KILN_IK_DONE) ik->wait(instance, msg, size);  // never blocks
 * and reads the results in the next cycle when poll() says KILN_IK_RUNNING; or calls the
 * synchronous solve() where it can afford to block for the solve's run time.
 *
 * Warm start. Target i of a batch is "slot" i of the instance. Every solve records, per slot, the
 * joint vector it returned for a valid target there: the slot's last solution (reserved at
 * activate for max_batch slots, all empty after activate). A solve with KILN_IK_SOLVE_WARM_START
 * in its options starts seed 0 of each target from its slot's last solution (unless initial_q is
 * given), so a loop tracking a moving target converges in a few iterations without handing the
 * previous q back itself. The slots' solutions are the instance's state for a hot swap:
 * export_state / import_state (../plugin.h) carry them to the next version in the plugin's own
 * versioned blob (for kiln's IK plugins: plugins/ik/README.md, "Hot swap"). A swap exports the
 * serving instance's state while its control thread keeps solving: a kiln.ik/1 plugin's
 * export_state may run on a setup thread concurrently with the real-time calls and returns the
 * slots as some completed solve left them; import_state, like activate, runs while no real-time
 * call does.
 *
 * Append-only: later revisions of this table add functions at the end (struct_size tells the
 * host which exist); kiln_ik_options, kiln_ik_problem, kiln_ik_result, kiln_ik_info and
 * kiln_ik_joint_info likewise only grow at the end, and a field past a struct's struct_size
 * takes its documented default. An incompatible change is a new id ("kiln.ik/2").
 */
#ifndef KILN_ABI_EXT_IK_H
#define KILN_ABI_EXT_IK_H

#include <stddef.h>
#include <stdint.h>

#if defined(__CUDACC_RTC__)
/* NVRTC resolves no relative include: it is handed headers by name (kiln: relative to the recipe's
 * include_dirs), so device code that reads these constants names the header from the ABI root. */
#include "kiln/plugin.h"
#else
#include "../plugin.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_IK_INTERFACE_ID "kiln.ik/1"

/* Floats per pose: x y z qw qx qy qz. */
#define KILN_IK_POSE_SIZE 7
/* Most seeds (independent starting points) per target a solve may ask for. */
#define KILN_IK_MAX_SEEDS 32
/* Capacity, with the NUL, of the name fields below. Longer names are truncated (the full length
 * is reported beside them). */
#define KILN_IK_NAME_CAPACITY 64

/* Joint types (kiln_ik_joint_info.type). */
enum {
  KILN_IK_JOINT_REVOLUTE = 0,   /* rotation about the axis, within [lower, upper] rad */
  KILN_IK_JOINT_CONTINUOUS = 1, /* unlimited rotation; reported as [-pi, pi], solutions wrapped into it */
  KILN_IK_JOINT_PRISMATIC = 2   /* translation along the axis, within [lower, upper] m */
};

/* Where the buffers of a problem and its result live (kiln_ik_problem.memory). */
enum {
  KILN_IK_MEMORY_HOST = 0,  /* host memory (pageable or pinned), read and written by the calls */
  KILN_IK_MEMORY_DEVICE = 1 /* device memory of the activated device, read and written by the kernel */
};

/* What poll() reports. */
enum {
  KILN_IK_IDLE = 0,    /* no solve in flight */
  KILN_IK_RUNNING = 1, /* a solve is in flight and not finished */
  KILN_IK_DONE = 2     /* a solve is in flight and finished: wait() returns without blocking */
};

/* Defaults, used wherever an option is 0 (or absent because of struct_size). */
#define KILN_IK_DEFAULT_MAX_ITERATIONS 128
#define KILN_IK_DEFAULT_POSITION_TOLERANCE 1e-4f    /* m */
#define KILN_IK_DEFAULT_ORIENTATION_TOLERANCE 1e-3f /* rad */
#define KILN_IK_DEFAULT_SEEDS_PER_TARGET 8
#define KILN_IK_DEFAULT_DAMPING 1e-2f

/* Solve flags (kiln_ik_options.flags). A bit not defined here is refused (KILN_ERR_INVALID_ARGUMENT)
 * by plugins that know the field, so a host learns that a flag is not understood. */
#define KILN_IK_SOLVE_WARM_START 0x1u /* seed 0 from the slot's last solution (see "Warm start") */

/* Solver options. Owned by the caller, read during solve_async/solve only. Zero-initialise
 * and set struct_size = sizeof(kiln_ik_options); every 0 means "the default". */
typedef struct kiln_ik_options {
  uint32_t struct_size;
  /* Damped-least-squares (Levenberg-Marquardt) iterations per seed; 0: 128. The run time of a
   * solve is bounded by this number (a target stops early once one of its seeds converged). A
   * plugin built as a variant may cap it lower (kiln's: plugins/ik/README.md, "Variants"). */
  uint32_t max_iterations;
  /* A seed has converged when its position error is below position_tolerance (m; 0: 1e-4)
   * and its orientation error below orientation_tolerance (rad; 0: 1e-3). */
  float position_tolerance;
  float orientation_tolerance;
  /* Seeds per target, 1..KILN_IK_MAX_SEEDS; 0: 8. Seed 0 starts from the problem's initial_q
   * (or from the middle of every joint's range when initial_q is NULL); the others from
   * random joint vectors within the limits, drawn from a counter-based generator keyed by
   * (random_seed, target index, seed index, restart), so results are reproducible. A seed that
   * stalls restarts from a fresh random vector. The best seed of each target is returned: a
   * converged one if any, else the one with the smallest error. */
  uint32_t seeds_per_target;
  /* Initial damping lambda of J J^T + lambda I (m^2, rad^2); 0: the plugin's default, 1e-2
   * unless it was built as a variant with another. Adapted per seed. */
  float damping;
  /* Key of the random starting points; 0 is a valid key. */
  uint64_t random_seed;
  /* KILN_IK_SOLVE_* bits; 0 (or absent): none. Appended after kiln.ik/1's first release: a plugin
   * that predates it ignores it (and leaves kiln_ik_info.solve_flags 0, see there).
   * KILN_IK_SOLVE_WARM_START: seed 0 of target i starts from slot i's last solution, where the
   * slot has one and initial_q is NULL (initial_q, when given, wins); a slot without one (nothing
   * solved there since activate, or not carried by import_state) starts as without the flag. */
  uint32_t flags;
  uint32_t reserved; /* 0 */
} kiln_ik_options;

/* One batch of targets: the solve's inputs. Owned by the caller; read during solve_async/solve
 * only (host-memory inputs are copied before the call returns; device-memory inputs are read
 * by the kernel in stream order). */
typedef struct kiln_ik_problem {
  uint32_t struct_size;
  uint32_t count;    /* number of targets, 0..max_batch of activate */
  int32_t memory;    /* KILN_IK_MEMORY_HOST or KILN_IK_MEMORY_DEVICE, for every buffer of the
                        problem and of its result */
  uint32_t reserved; /* 0 */
  /* count * KILN_IK_POSE_SIZE floats: the tip pose wanted for each target, in the base frame. */
  const float *targets;
  /* NULL, or count * dof floats: seed 0 of each target (clamped into the limits). Pass the
   * previous cycle's solution here to track a moving target. */
  const float *initial_q;
  /* NULL: all defaults. Always host memory. */
  const kiln_ik_options *options;
  /* A cudaStream_t (as void *) of the activated device to run on; NULL: the plugin's own
   * stream. Ignored when activated host only. */
  void *stream;
} kiln_ik_problem;

/* Where a solve writes its outputs. Owned by the caller; the buffers must stay valid until
 * the solve completed (wait() or solve() returned; for device memory, until the work is done
 * in stream order). */
typedef struct kiln_ik_result {
  uint32_t struct_size;
  uint32_t reserved; /* 0 */
  float *q;                 /* count * dof floats, the best joint vector of each target; required */
  float *position_error;    /* count floats (m), or NULL */
  float *orientation_error; /* count floats (rad), or NULL */
  uint8_t *converged;       /* count bytes: 1 when both errors are below the tolerances, or NULL */
  uint32_t *iterations;     /* count: iterations run for the target (its seeds run in lockstep), or NULL */
} kiln_ik_result;

/* What the plugin is, and what activate reserved. */
typedef struct kiln_ik_info {
  uint32_t struct_size; /* set by the caller to its sizeof; the plugin writes no field past it */
  uint32_t dof;         /* joints of the chain (= entries of a joint vector) */
  uint32_t max_seeds;   /* KILN_IK_MAX_SEEDS of the plugin */
  uint32_t max_batch;   /* reserved at activate; 0 when not active */
  int32_t device_ordinal;  /* activated device; -1 when host only or not active */
  uint32_t active;         /* 1 after a successful activate */
  uint64_t device_bytes;   /* device memory reserved at activate */
  uint64_t host_bytes;     /* host (pinned when on a device) staging memory reserved at activate */
  /* NUL-terminated, truncated to KILN_IK_NAME_CAPACITY - 1 characters. */
  char robot[KILN_IK_NAME_CAPACITY];     /* the URDF's robot name */
  char base_link[KILN_IK_NAME_CAPACITY]; /* frame of targets and FK results */
  char tip_link[KILN_IK_NAME_CAPACITY];  /* frame being placed */
  char source[KILN_IK_NAME_CAPACITY];    /* file name (no directory) of the model the chain came from */
  /* The KILN_IK_SOLVE_* flags the plugin honours. Appended after kiln.ik/1's first release: a
   * plugin that predates it writes nothing here, so a caller that zero-initialised the struct
   * reads 0 (no flag honoured). */
  uint32_t solve_flags;
  uint32_t reserved; /* 0 */
} kiln_ik_info;

/* One joint of the chain. */
typedef struct kiln_ik_joint_info {
  uint32_t struct_size; /* set by the caller to its sizeof; the plugin writes no field past it */
  int32_t type;         /* KILN_IK_JOINT_* */
  double lower;         /* rad or m; continuous joints: -pi */
  double upper;         /* rad or m; continuous joints: pi */
  double axis[3];       /* unit axis in the joint's own frame */
  uint32_t name_length; /* strlen of the full name (name holds at most KILN_IK_NAME_CAPACITY - 1) */
  char name[KILN_IK_NAME_CAPACITY]; /* the joint's name in the model, NUL-terminated */
} kiln_ik_joint_info;

typedef struct kiln_ik_v1 {
  uint32_t struct_size;

  /* Number of joints. Works without activate.
   * [any-thread] [control-thread: real-time safe] */
  uint32_t (*dof)(const kiln_instance *instance);

  /* Fill *info (up to info->struct_size). Works without activate.
   * [any-thread] [control-thread: real-time safe]
   * KILN_ERR_INVALID_ARGUMENT when info is NULL or info->struct_size is 0. */
  kiln_status (*info)(const kiln_instance *instance, kiln_ik_info *info);

  /* Fill *info (up to info->struct_size) for joint index (0 .. dof-1, base to tip). Works
   * without activate. Names and limits are copied into the caller's struct.
   * [any-thread] [control-thread: real-time safe]
   * KILN_ERR_INVALID_ARGUMENT when index >= dof, info is NULL or info->struct_size is 0. */
  kiln_status (*joint_info)(const kiln_instance *instance, uint32_t index, kiln_ik_joint_info *info);

  /* Forward kinematics on the host: for each of the count joint vectors in q (count * dof
   * floats, host memory) write the tip pose in the base frame into poses (count *
   * KILN_IK_POSE_SIZE floats, host memory; quaternion with w >= 0). Computed in double, then
   * rounded. Joint values are used as given (no clamping). Works without activate.
   * [any-thread] [control-thread: real-time safe] (no allocation; O(count * dof) work)
   * KILN_ERR_INVALID_ARGUMENT when q or poses is NULL and count > 0. */
  kiln_status (*fk)(const kiln_instance *instance, const float *q, uint32_t count, float *poses);

  /* Start solving problem, writing into result. Returns once the work is enqueued (device) or
   * done (host only); one solve may be in flight per instance: call wait() before the next.
   * Host-memory inputs are copied (into staging reserved at activate) before it returns, so
   * the caller may reuse them at once; host-memory outputs are written by wait().
   * On a device it copies inputs, launches one kernel and records an event on the stream:
   * no allocation, no lock, no blocking (beyond the driver's bounded launch-queue back-pressure).
   * Host only, it runs the whole solve on the calling thread before returning (bounded by
   * count * seeds * max_iterations steps; slow).
   * [control-thread: real-time safe]
   * KILN_ERR_STATE: not active, or a solve is in flight. KILN_ERR_CAPACITY: count > max_batch.
   * KILN_ERR_INVALID_ARGUMENT: NULL buffers, bad options (seeds_per_target > KILN_IK_MAX_SEEDS,
   * negative tolerances), a host-memory target whose quaternion is zero or not finite, device
   * memory when host only. KILN_ERR_DEVICE: a CUDA call failed (message names it). */
  kiln_status (*solve_async)(kiln_instance *instance, const kiln_ik_problem *problem,
                             const kiln_ik_result *result, char *message, size_t message_size);

  /* Whether the solve in flight finished: KILN_IK_IDLE, KILN_IK_RUNNING or KILN_IK_DONE.
   * Non-blocking (a CUDA event query).
   * [control-thread: real-time safe] */
  int32_t (*poll)(kiln_instance *instance);

  /* Complete the solve in flight: wait for the device (blocking for at most the solve's
   * bounded run time), then, for host memory, copy the outputs into the result buffers given
   * to solve_async. KILN_OK with nothing to do when no solve is in flight. After
   * poll() == KILN_IK_DONE it does not block.
   * [control-thread: real-time safe] after poll() returned KILN_IK_DONE; otherwise it blocks
   * until the device finished (not real-time safe).
   * KILN_ERR_DEVICE when the kernel failed (the instance stays usable only if the error was
   * not sticky; the message says which CUDA error). */
  kiln_status (*wait)(kiln_instance *instance, char *message, size_t message_size);

  /* solve_async followed by wait: returns with every output written.
   * [control-thread] blocks for the solve's bounded run time: real-time safe only where the
   * loop can afford that wait. Same errors as solve_async and wait. */
  kiln_status (*solve)(kiln_instance *instance, const kiln_ik_problem *problem,
                       const kiln_ik_result *result, char *message, size_t message_size);
} kiln_ik_v1;

#ifdef __cplusplus
}
#endif

#endif
