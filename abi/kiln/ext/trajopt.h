/* kiln interface "kiln.trajopt/1": batched trajectory optimisation of one serial chain.
 *
 * A plugin offering this interface plans, for each problem of a batch, a joint trajectory of one
 * kinematic chain (a robot from a base link to a tip link, fixed when the plugin was built, e.g.
 * from a URDF) that starts at a given state, ends at a goal, stays within the chain's joint
 * position, velocity and torque limits, and is smooth and cheap in effort. The horizon (number
 * of time steps N) is fixed when the plugin is built (one plugin per N, as one module per N).
 *
 * Conventions
 *   - Units: metres, radians, seconds, newton metres (newtons for prismatic joints).
 *   - A trajectory has N + 1 knots k = 0..N at times k * dt; knot 0 is the start state. Joint
 *     vectors are dof floats in chain order (base to tip); arrays of vectors are row-major
 *     (problem i's knot k at [(i * (N + 1) + k) * dof, ... + dof)).
 *   - Velocities and accelerations are finite differences of the positions: qd_k = (q_k -
 *     q_{k-1}) / dt for k >= 1 (qd_0 is the given start velocity), qdd_k = (qd_{k+1} - qd_k) / dt
 *     for k < N and qdd_N = 0 (the trajectory ends by holding q_N). The torques are the chain's
 *     inverse dynamics (RNEA, with gravity, no friction) at (q_k, qd_k, qdd_k). A controller that
 *     applies qdd_k over [k dt, (k + 1) dt] reproduces the trajectory exactly (semi-implicit Euler).
 *   - Pose goals are KILN_TRAJOPT_POSE_SIZE (7) floats: position x y z, then the unit quaternion
 *     w x y z (Hamilton, rotating tip-frame vectors into the base frame), as in kiln.ik/1.
 *   - Position error: |p_goal - p_tip(q_N)| in metres; orientation error: the angle in [0, pi] of
 *     the rotation between the tip's orientation at q_N and the goal's, in radians. Joint goals:
 *     position_error is max_j |q_N,j - goal_j| (rad or m) and orientation_error is 0.
 *   - Limit violations: how far the trajectory goes past the chain's limits (the URDF's), the
 *     largest over knots and joints: position (rad or m past [lower, upper]), velocity (|qd_k| -
 *     velocity limit, rad/s or m/s) and torque (|tau_k| - effort limit, N m or N); 0 when within.
 *     A joint the URDF gives no velocity or effort limit (0) has none of that kind.
 *
 * Threads (see ../plugin.h), as kiln.ik/1: an instance serves one control thread; the functions
 * marked [control-thread: real-time safe] are never called concurrently with one another on the
 * same instance. [any-thread] functions may run concurrently with anything, a solve included.
 *
 * Tracking (revision 1.1, KILN_TRAJOPT_FEATURE_TRACKING). A problem of goal kind
 * KILN_TRAJOPT_GOAL_TRACK follows a reference instead of reaching a goal: a tip pose per knot
 * (track_poses, knots 1..N) with a position and an orientation weight per knot (track_weights). Its
 * cost replaces the goal and terminal terms by
 *   tracking:   sum_k w_p,k^2 |p_k - p_ref,k|^2 / (1 m)^2 + w_o,k^2 angle_k^2 / (1 rad)^2
 * (an orientation weight of 0 tracks the position alone); smoothness, effort and limits stay. Its
 * position_error and orientation_error are the largest over the knots (orientation over the knots
 * whose orientation weight is not 0), and it has converged when no limit is violated and its last
 * step was accepted and lowered the cost by less than KILN_TRAJOPT_COST_PLATEAU: the tolerances do
 * not apply (a reference need not be exactly followable). This is the problem a model-predictive controller
 * solves every tick: one problem (count 1), one seed, a small max_iterations, and
 * KILN_TRAJOPT_SOLVE_WARM_SHIFT to start from the last tick's plan advanced by one knot.
 *
 * Within the limits (revision 1.1, KILN_TRAJOPT_FEATURE_WITHIN_LIMITS). A returned trajectory keeps
 * every position, velocity and torque limit whenever the solver found one that does: when the best
 * seed ends without converging and outside a velocity or torque limit (a goal out of reach, or out
 * of reach in N * dt), the solver continues from it with the goal's (or the reference's) weight
 * lowered tenfold per round down to 0, for up to max_iterations more steps, until the trajectory is
 * within every limit; it is returned not converged, with its (larger) goal error. The result's
 * within_limits says per problem whether the returned trajectory is within every limit, checked
 * after that with the same dynamics; a controller executes only a problem whose within_limits is 1
 * (converged implies it). A start velocity beyond its limit, or a start state from which no
 * trajectory of N steps keeps the torque limits, can leave it 0.
 *
 * Revisions of kiln.trajopt/1 (append-only; kiln_trajopt_info.features tells a host what the
 * plugin does, struct_size which fields exist):
 *   1.0  pose and joint goals, warm start.
 *   1.1  tracking problems (KILN_TRAJOPT_GOAL_TRACK, problem.track_poses, track_weights), the
 *        shifted warm start (KILN_TRAJOPT_SOLVE_WARM_SHIFT), results kept within the limits
 *        (result.within_limits), info.features. A 1.1 plugin accepts a 1.0 host's smaller
 *        problem and result structs (the new fields take their defaults: no tracking input,
 *        within_limits not written); a 1.0 plugin refuses a tracking problem's goal kind and the
 *        new flag (KILN_ERR_INVALID_ARGUMENT), never writes within_limits, and reports
 *        features 0 (its info struct ends before the field).
 *
 * Lifecycle. info and joint_info work right after create (no activate, no device). The solve
 * functions need activate:
 *   - activate(device_ordinal >= 0, max_batch): selects the device, creates the plugin's own
 *     stream and completion event, reserves device buffers for max_batch problems of up to
 *     KILN_TRAJOPT_MAX_SEEDS seeds each and pinned host staging buffers, and loads the solver's
 *     kernels (a missing or wrong kernel image fails here).
 *   - activate(-1, max_batch): host only. The same algorithm, compiled for the host, runs on the
 *     calling thread's CPU (for tests and device-less machines; far slower).
 *     KILN_TRAJOPT_MEMORY_DEVICE is refused.
 * Every buffer a solve uses is reserved at activate; a batch larger than max_batch is
 * KILN_ERR_CAPACITY, never an allocation.
 *
 * Solving, as kiln.ik/1: solve_async enqueues (device) or solves (host only) and returns; poll
 * reports without blocking; wait completes; solve is both.
 *
 * Seeds and stopping. Each problem may be solved from up to seeds_per_target starting
 * trajectories. A seed has converged when its goal error is within the tolerances, no limit is
 * violated, and its last step lowered the cost by less than KILN_TRAJOPT_COST_PLATEAU (relative;
 * a rejected step lowered it by nothing). Seed 0 runs first; the other seeds run only for a
 * problem seed 0 did not solve (on a device in parallel, stopping once one of them converged;
 * host only one after another, stopping at the first that converged). Every seed stops after
 * max_iterations steps. The best seed is returned: a converged one if any (the lowest cost among
 * those), else one within every limit (the lowest cost among those; 1.1), else the one with the
 * lowest cost.
 *
 * Warm start. Problem i of a batch is "slot" i of the instance. Every solve records, per slot,
 * the trajectory (q_1..q_N) it returned for a valid problem there: the slot's last solution
 * (reserved at activate, all empty after activate). A solve with KILN_TRAJOPT_SOLVE_WARM_START
 * starts seed 0 of each problem from its slot's last solution (unless initial_trajectories is
 * given), so a replanning loop converges in a few iterations. The slots' solutions are the
 * instance's hot-swap state: export_state / import_state (../plugin.h) carry them in the
 * plugin's versioned blob (kiln's plugin: plugins/trajopt/README.md, "State"). export_state may
 * run on a setup thread while the control thread keeps solving and returns the slots as some
 * completed solve left them; import_state, like activate, runs while no real-time call does.
 *
 * Append-only: later revisions add functions at the end of kiln_trajopt_v1 (struct_size tells
 * the host which exist); the structs only grow at the end, and a field past a struct's
 * struct_size takes its documented default. An incompatible change is a new id
 * ("kiln.trajopt/2").
 */
#ifndef KILN_ABI_EXT_TRAJOPT_H
#define KILN_ABI_EXT_TRAJOPT_H

#include <stddef.h>
#include <stdint.h>

#include "../plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_TRAJOPT_INTERFACE_ID "kiln.trajopt/1"

/* Floats per pose goal: x y z qw qx qy qz. */
#define KILN_TRAJOPT_POSE_SIZE 7
/* Most seeds per problem a solve may ask for. */
#define KILN_TRAJOPT_MAX_SEEDS 8
/* Capacity, with the NUL, of the name fields below (longer names are truncated). */
#define KILN_TRAJOPT_NAME_CAPACITY 64

/* Goal kinds (kiln_trajopt_problem.goal_kinds). */
enum {
  KILN_TRAJOPT_GOAL_POSE = 0, /* the tip pose at q_N: pose_goals[i * 7 ...] */
  KILN_TRAJOPT_GOAL_JOINT = 1, /* the joint vector q_N: joint_goals[i * dof ...] */
  KILN_TRAJOPT_GOAL_TRACK = 2  /* (1.1) a tip pose per knot: track_poses[(i * N + k - 1) * 7 ...], k = 1..N */
};

/* What a plugin does beyond revision 1.0 (kiln_trajopt_info.features). */
#define KILN_TRAJOPT_FEATURE_TRACKING 0x1u      /* KILN_TRAJOPT_GOAL_TRACK and KILN_TRAJOPT_SOLVE_WARM_SHIFT */
#define KILN_TRAJOPT_FEATURE_WITHIN_LIMITS 0x2u /* see "Within the limits"; result.within_limits is written */

/* Where the buffers of a problem and its result live (kiln_trajopt_problem.memory). */
enum {
  KILN_TRAJOPT_MEMORY_HOST = 0,  /* host memory (pageable or pinned) */
  KILN_TRAJOPT_MEMORY_DEVICE = 1 /* device memory of the activated device, read and written by the kernels */
};

/* What poll() reports. */
enum {
  KILN_TRAJOPT_IDLE = 0,    /* no solve in flight */
  KILN_TRAJOPT_RUNNING = 1, /* a solve is in flight and not finished */
  KILN_TRAJOPT_DONE = 2     /* a solve is in flight and finished: wait() returns without blocking */
};

/* Defaults, used wherever an option is 0 (or absent because of struct_size). */
#define KILN_TRAJOPT_DEFAULT_MAX_ITERATIONS 60
#define KILN_TRAJOPT_DEFAULT_POSITION_TOLERANCE 1e-3f    /* m (joint goals: rad or m) */
#define KILN_TRAJOPT_DEFAULT_ORIENTATION_TOLERANCE 1e-2f /* rad */
#define KILN_TRAJOPT_DEFAULT_SEEDS_PER_TARGET 4
#define KILN_TRAJOPT_DEFAULT_DT 0.02f /* s */
/* A converged seed's last accepted step lowered the cost by less than this fraction. */
#define KILN_TRAJOPT_COST_PLATEAU 1e-2f

/* Solve flags (kiln_trajopt_options.flags). A bit not defined here is refused. */
#define KILN_TRAJOPT_SOLVE_WARM_START 0x1u /* seed 0 from the slot's last solution (see "Warm start") */
/* (1.1) Seed 0 from the slot's last solution advanced by one knot (q_1..q_{N-1} := its q_2..q_N,
 * q_N := its q_N): the next tick of a receding horizon, whose q_0 is the state the last plan's
 * q_1 led to. Implies KILN_TRAJOPT_SOLVE_WARM_START. */
#define KILN_TRAJOPT_SOLVE_WARM_SHIFT 0x2u

/* Solver options. Owned by the caller, read during solve_async/solve only. Zero-initialise and
 * set struct_size = sizeof(kiln_trajopt_options); every 0 means "the default".
 *
 * The cost, summed over the knots (each term a least-squares residual; weights >= 0):
 *   goal:       goal_weight^2 * (|p - p_goal|^2 / (1 m)^2 + angle^2 / (1 rad)^2)   (pose goal)
 *               goal_weight^2 * |q_N - goal|^2                                     (joint goal)
 *   smoothness: smoothness_weight^2 * dt * sum_k |qdd_k|^2          (rad/s^2 per unit weight)
 *   effort:     effort_weight^2 * dt * sum_k sum_j (tau_k,j / effort_limit_j)^2
 *   terminal:   goal_weight^2 * 0.01 * |qd_N|^2       (the trajectory comes to rest at the goal)
 *   limits:     a penalty on the velocity and torque beyond 95 % of their limits; positions are
 *               kept within their limits by projection. */
typedef struct kiln_trajopt_options {
  uint32_t struct_size;
  /* Levenberg-Marquardt steps (accepted or not) per seed; 0: 60. Bounds the solve's run time. */
  uint32_t max_iterations;
  /* Goal tolerances: position (m; joint goals: rad or m, max over joints; 0: 1e-3) and
   * orientation (rad; 0: 1e-2). */
  float position_tolerance;
  float orientation_tolerance;
  /* Seeds per problem, 1..KILN_TRAJOPT_MAX_SEEDS; 0: 4. Seed 0 starts from initial_trajectories
   * (or the slot's last solution, or, for a joint goal, a minimum-jerk interpolation from q_0 to
   * the goal; for a pose goal, holding q_0); the others from minimum-jerk interpolations to
   * random joint vectors near that end, drawn from a counter-based generator keyed by
   * (random_seed, problem index, seed index): reproducible. */
  uint32_t seeds_per_target;
  /* Time step in seconds for every problem whose dt entry is absent (problem->dt NULL); 0: 0.02. */
  float dt;
  /* Cost weights (see above); 0: the defaults 1000 (goal), 0.05 (smoothness), 0.5 (effort). */
  float goal_weight;
  float smoothness_weight;
  float effort_weight;
  /* Key of the random starting points; 0 is a valid key. */
  uint64_t random_seed;
  /* KILN_TRAJOPT_SOLVE_* bits; 0: none. */
  uint32_t flags;
  uint32_t reserved; /* 0 */
} kiln_trajopt_options;

/* One batch of problems: the solve's inputs. Owned by the caller; read during solve_async/solve
 * only (host-memory inputs are copied before the call returns; device-memory inputs are read by
 * the kernels in stream order). Arrays of one value per problem hold `count` entries. */
typedef struct kiln_trajopt_problem {
  uint32_t struct_size;
  uint32_t count;    /* number of problems, 0..max_batch of activate */
  int32_t memory;    /* KILN_TRAJOPT_MEMORY_HOST or _DEVICE, for every buffer of the problem and result */
  uint32_t reserved; /* 0 */
  /* count * dof: the start position q_0 (within the position limits; clamped into them). Required. */
  const float *q0;
  /* NULL (at rest), or count * dof: the start velocity qd_0. */
  const float *qd0;
  /* NULL (every goal a pose), or count bytes of KILN_TRAJOPT_GOAL_*. */
  const uint8_t *goal_kinds;
  /* count * KILN_TRAJOPT_POSE_SIZE: the pose goals; required when a problem has a pose goal
   * (entries of joint-goal problems are not read). */
  const float *pose_goals;
  /* count * dof: the joint goals; required when a problem has a joint goal. */
  const float *joint_goals;
  /* NULL (options->dt for all), or count floats: each problem's time step (s, > 0). */
  const float *dt;
  /* NULL, or count * N * dof: seed 0's trajectory q_1..q_N of each problem (clamped into the
   * position limits). Pass the previous plan here to replan from it. */
  const float *initial_trajectories;
  /* NULL: all defaults. Always host memory. */
  const kiln_trajopt_options *options;
  /* A cudaStream_t (as void *) of the activated device; NULL: the plugin's own. Ignored host only. */
  void *stream;
  /* (1.1) count * N * KILN_TRAJOPT_POSE_SIZE: the tip's reference pose at knots 1..N of each
   * tracking problem (problem i's knot k at [(i * N + k - 1) * 7, ...)); required when a problem
   * tracks (entries of other problems are not read). */
  const float *track_poses;
  /* (1.1) NULL, or count * N * 2: per knot of a tracking problem, the position weight (per m)
   * and the orientation weight (per rad), each >= 0. NULL: position weight goal_weight / 10
   * (100 by default) and orientation weight 0 at every knot. */
  const float *track_weights;
} kiln_trajopt_problem;

/* Where a solve writes its outputs. Owned by the caller; the buffers must stay valid until the
 * solve completed (wait() or solve() returned; for device memory, until the work is done in
 * stream order). Every buffer but q may be NULL (not written). */
typedef struct kiln_trajopt_result {
  uint32_t struct_size;
  uint32_t reserved; /* 0 */
  float *q;                    /* count * (N + 1) * dof: positions, knot 0 = q_0; required */
  float *qd;                   /* count * (N + 1) * dof: velocities, knot 0 = qd_0 */
  float *torques;              /* count * (N + 1) * dof: inverse dynamics at each knot */
  uint8_t *converged;          /* count bytes: 1 when the returned seed converged (see "Seeds and stopping") */
  float *position_error;       /* count: m (joint goals: rad or m) */
  float *orientation_error;    /* count: rad (joint goals: 0) */
  float *position_violation;   /* count: rad or m */
  float *velocity_violation;   /* count: rad/s or m/s */
  float *torque_violation;     /* count: N m or N */
  float *cost;                 /* count: the returned trajectory's cost */
  uint32_t *iterations;        /* count: steps the returned seed ran */
  uint8_t *within_limits;      /* (1.1) count bytes: 1 when the returned trajectory is within every limit (see "Within the limits") */
} kiln_trajopt_result;

/* What the plugin is, and what activate reserved. */
typedef struct kiln_trajopt_info {
  uint32_t struct_size;   /* set by the caller to its sizeof; the plugin writes no field past it */
  uint32_t dof;           /* joints of the chain */
  uint32_t horizon;       /* N: time steps per trajectory (N + 1 knots), fixed when built */
  uint32_t max_seeds;     /* KILN_TRAJOPT_MAX_SEEDS of the plugin */
  uint32_t max_batch;     /* reserved at activate; 0 when not active */
  int32_t device_ordinal; /* activated device; -1 when host only or not active */
  uint32_t active;        /* 1 after a successful activate */
  uint32_t solve_flags;   /* the KILN_TRAJOPT_SOLVE_* flags the plugin honours */
  uint64_t device_bytes;  /* device memory reserved at activate */
  uint64_t host_bytes;    /* host (pinned when on a device) memory reserved at activate */
  char robot[KILN_TRAJOPT_NAME_CAPACITY];     /* the URDF's robot name */
  char base_link[KILN_TRAJOPT_NAME_CAPACITY]; /* frame of pose goals */
  char tip_link[KILN_TRAJOPT_NAME_CAPACITY];  /* frame being placed */
  char source[KILN_TRAJOPT_NAME_CAPACITY];    /* file name of the model the chain came from */
  uint32_t features;  /* (1.1) KILN_TRAJOPT_FEATURE_* bits; 0 from a 1.0 plugin */
  uint32_t reserved;  /* 0 */
} kiln_trajopt_info;

/* One joint of the chain and its limits (the URDF's). */
typedef struct kiln_trajopt_joint_info {
  uint32_t struct_size;  /* set by the caller to its sizeof; the plugin writes no field past it */
  int32_t type;          /* as KILN_IK_JOINT_* (ik.h): 0 revolute, 1 continuous, 2 prismatic */
  double lower;          /* rad or m; continuous joints: -pi (and position_limited 0) */
  double upper;          /* rad or m; continuous joints: pi */
  double velocity_limit; /* rad/s or m/s; 0: none */
  double effort_limit;   /* N m or N; 0: none */
  uint32_t position_limited; /* 1 when [lower, upper] binds */
  uint32_t name_length;      /* strlen of the full name */
  char name[KILN_TRAJOPT_NAME_CAPACITY];
} kiln_trajopt_joint_info;

typedef struct kiln_trajopt_v1 {
  uint32_t struct_size;

  /* Fill *info (up to info->struct_size). Works without activate.
   * [any-thread] [control-thread: real-time safe]
   * KILN_ERR_INVALID_ARGUMENT when info is NULL or info->struct_size is 0. */
  kiln_status (*info)(const kiln_instance *instance, kiln_trajopt_info *info);

  /* Fill *info for joint index (0 .. dof-1). Works without activate.
   * [any-thread] [control-thread: real-time safe]
   * KILN_ERR_INVALID_ARGUMENT when index >= dof, info is NULL or info->struct_size is 0. */
  kiln_status (*joint_info)(const kiln_instance *instance, uint32_t index, kiln_trajopt_joint_info *info);

  /* Start solving problem, writing into result. Returns once the work is enqueued (device) or
   * done (host only); one solve may be in flight per instance: call wait() before the next.
   * Host-memory inputs are copied (into staging reserved at activate) before it returns;
   * host-memory outputs are written by wait(). On a device: copies, four kernel launches (seed 0,
   * the other seeds, the best seed brought within the limits, the best seed's outputs), copies back and one event, all on the stream:
   * no allocation, no lock, no blocking. Host only: the whole solve on the calling thread
   * (bounded by count * (seeds + 1) * max_iterations steps, the one more for "Within the limits"; slow).
   * [control-thread: real-time safe]
   * KILN_ERR_STATE: not active, or a solve in flight. KILN_ERR_CAPACITY: count > max_batch.
   * KILN_ERR_INVALID_ARGUMENT: NULL required buffers, bad options (seeds_per_target >
   * KILN_TRAJOPT_MAX_SEEDS, negative or non-finite tolerances, dt or weights, unknown flags), and
   * for host memory: a non-finite start state, goal or dt, dt <= 0, a goal kind not defined,
   * a pose goal whose quaternion is zero, a tracking problem's non-finite or zero-quaternion
   * reference pose or negative or non-finite weight; device memory when host only; a problem or
   * result struct_size smaller than revision 1.0's. A problem with device
   * memory inputs that are not finite is returned not converged with NaN errors.
   * An unreachable goal is not an error: the problem is reported not converged (and its
   * trajectory kept within the limits: see "Within the limits").
   * KILN_ERR_DEVICE: a CUDA call failed (the message names it). */
  kiln_status (*solve_async)(kiln_instance *instance, const kiln_trajopt_problem *problem,
                             const kiln_trajopt_result *result, char *message, size_t message_size);

  /* Whether the solve in flight finished: KILN_TRAJOPT_IDLE, _RUNNING or _DONE. Non-blocking.
   * [control-thread: real-time safe] */
  int32_t (*poll)(kiln_instance *instance);

  /* Complete the solve in flight (for host memory, copy the outputs into the result buffers
   * given to solve_async). KILN_OK with nothing to do when none is in flight.
   * [control-thread: real-time safe] after poll() returned KILN_TRAJOPT_DONE; otherwise it
   * blocks until the device finished. KILN_ERR_DEVICE when a kernel failed. */
  kiln_status (*wait)(kiln_instance *instance, char *message, size_t message_size);

  /* solve_async followed by wait. [control-thread] blocks for the solve's bounded run time. */
  kiln_status (*solve)(kiln_instance *instance, const kiln_trajopt_problem *problem,
                       const kiln_trajopt_result *result, char *message, size_t message_size);
} kiln_trajopt_v1;

#ifdef __cplusplus
}
#endif

#endif
