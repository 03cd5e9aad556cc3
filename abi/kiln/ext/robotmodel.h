/* kiln interface "kiln.robotmodel/1": the robot model a plugin was built from, on the host, in double.
 *
 * A plugin generated from a URDF (kiln's IK and TrajOpt plugins) solves for one serial chain, a
 * robot from a base link to a tip link. This interface hands the host that same chain: its
 * description (joints, types, axes, origins, limits), forward kinematics for a batch of joint
 * vectors and, where the plugin was generated with dynamics, inverse dynamics (RNEA). It is the
 * model the plugin's own solver uses (the same generated code, instantiated in double), so a host
 * can check a returned answer (an IK solution, a trajectory) with the plugin's model instead of a
 * model of its own that may be of another robot.
 *
 * Conventions
 *   - Units: metres, radians, seconds, kilograms; torques in N m (forces in N for prismatic joints).
 *   - Joint vectors are dof doubles in chain order (base to tip); batches are row-major
 *     (configuration i's joints at [i * dof, (i + 1) * dof)).
 *   - Poses are KILN_ROBOTMODEL_POSE_SIZE (7) doubles: position x y z, then the unit quaternion
 *     w x y z with w >= 0 (Hamilton, rotating tip-frame vectors into the base frame): the
 *     convention of kiln.ik/1 and kiln.trajopt/1.
 *   - Rotations in the structs are 3x3, row-major; the columns are the child frame's axes in the
 *     parent frame.
 *
 * Threads (see ../plugin.h). Every function is [any-thread] and [control-thread: real-time safe]:
 * it may run on any thread, concurrently with any other call on the same instance, a solve in flight
 * included; it allocates nothing, takes no lock, does no I/O and touches no device. Each works right
 * after create: no activate, no device needed.
 *
 * Ownership. Every buffer and struct is the caller's; the functions read and write them during the
 * call only. Names are copied into the caller's structs.
 *
 * Errors. Every function but dof returns a kiln_status and writes a NUL-terminated reason into the
 * caller's (message, message_size) buffer (message may be NULL when message_size is 0): it names the
 * argument that is wrong and what to pass instead. Nothing is written to the outputs on an error.
 *
 * Append-only: later revisions add functions at the end of kiln_robotmodel_v1 (struct_size tells the
 * host which exist); the structs only grow at the end, and a field past a struct's struct_size takes
 * its documented default. An incompatible change is a new id ("kiln.robotmodel/2").
 */
#ifndef KILN_ABI_EXT_ROBOTMODEL_H
#define KILN_ABI_EXT_ROBOTMODEL_H

#include <stddef.h>
#include <stdint.h>

#include "../plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_ROBOTMODEL_INTERFACE_ID "kiln.robotmodel/1"

/* Doubles per pose: x y z qw qx qy qz. */
#define KILN_ROBOTMODEL_POSE_SIZE 7
/* Capacity, with the NUL, of the name fields below. Longer names are truncated (the full length is
 * reported beside them where it matters). */
#define KILN_ROBOTMODEL_NAME_CAPACITY 64
/* Most configurations one fk or rnea call takes: bounds a call's run time (a real-time thread can
 * afford a known number), and a count past it is refused before any buffer is touched. Larger
 * batches are split by the caller. */
#define KILN_ROBOTMODEL_MAX_COUNT 1048576u

/* Joint types (kiln_robotmodel_joint.type); the same values as KILN_IK_JOINT_* of kiln.ik/1. */
enum {
  KILN_ROBOTMODEL_JOINT_REVOLUTE = 0,   /* rotation about the axis, within [lower, upper] rad */
  KILN_ROBOTMODEL_JOINT_CONTINUOUS = 1, /* unlimited rotation; lower/upper reported as -pi/pi */
  KILN_ROBOTMODEL_JOINT_PRISMATIC = 2   /* translation along the axis, within [lower, upper] m */
};

/* The chain as a whole. */
typedef struct kiln_robotmodel_chain_info {
  uint32_t struct_size; /* set by the caller to its sizeof; the plugin writes no field past it */
  uint32_t dof;         /* joints of the chain (= entries of a joint vector) */
  uint32_t has_rnea;    /* 1 when rnea is offered (the plugin was generated with dynamics), else 0 */
  uint32_t reserved;    /* 0 */
  /* The gravity rnea applies, in the base frame (m/s^2); 0 0 0 when has_rnea is 0. */
  double gravity[3];
  /* The fixed transform from the last joint's frame to the tip link (fixed joints folded in). */
  double tip_position[3];
  double tip_rotation[9];
  /* NUL-terminated, truncated to KILN_ROBOTMODEL_NAME_CAPACITY - 1 characters. */
  char robot[KILN_ROBOTMODEL_NAME_CAPACITY];     /* the URDF's robot name */
  char base_link[KILN_ROBOTMODEL_NAME_CAPACITY]; /* frame of fk's poses */
  char tip_link[KILN_ROBOTMODEL_NAME_CAPACITY];  /* frame fk places */
  char source[KILN_ROBOTMODEL_NAME_CAPACITY];    /* file name (no directory) of the model */
  /* (1.1) The model's fingerprint, "xxh128:" and 32 hex digits: a digest of the URDF as parsed (every
   * link's inertial; every joint's type, frames, axis, limits, dynamics and mimic; not visuals,
   * collisions, comments or the order of elements), the chain (base, tip), the generators'
   * versions and, with dynamics (has_rnea 1), the gravity above (`kiln-urdf-fk URDF --base B --tip T
   * --check` prints it, with `--dynamics-check --gravity X Y Z` for a plugin with dynamics;
   * `--model-text` what it digests). Two plugins of equal fingerprints were generated from the same
   * robot model. "" from a 1.0 plugin (past the struct_size it writes). */
  char model_fingerprint[KILN_ROBOTMODEL_NAME_CAPACITY];
} kiln_robotmodel_chain_info;

/* One joint of the chain: where it sits, how it moves, and the URDF's limits. */
typedef struct kiln_robotmodel_joint {
  uint32_t struct_size; /* set by the caller to its sizeof; the plugin writes no field past it */
  int32_t type;         /* KILN_ROBOTMODEL_JOINT_* */
  double axis[3];       /* unit axis in the joint's own frame */
  /* The joint's frame at q = 0 in the previous joint's frame (the base link's for joint 0), fixed
   * joints between them folded in: fk is the product of origin * motion(q_j) over the joints, then
   * the chain's tip transform. */
  double origin_position[3];
  double origin_rotation[9];
  double lower;          /* rad or m; continuous joints: -pi */
  double upper;          /* rad or m; continuous joints: pi */
  double velocity_limit; /* rad/s or m/s; 0: none given */
  double effort_limit;   /* N m or N; 0: none given */
  uint32_t position_limited; /* 1 when [lower, upper] binds (0 for continuous joints) */
  uint32_t name_length;      /* strlen of the full name (name holds at most KILN_ROBOTMODEL_NAME_CAPACITY - 1) */
  char name[KILN_ROBOTMODEL_NAME_CAPACITY]; /* the joint's name in the model, NUL-terminated */
} kiln_robotmodel_joint;

typedef struct kiln_robotmodel_v1 {
  uint32_t struct_size;

  /* Number of joints; 0 when instance is NULL.
   * [any-thread] [control-thread: real-time safe] */
  uint32_t (*dof)(const kiln_instance *instance);

  /* Fill *info (up to info->struct_size).
   * [any-thread] [control-thread: real-time safe]
   * KILN_ERR_INVALID_ARGUMENT when instance or info is NULL or info->struct_size is 0. */
  kiln_status (*chain)(const kiln_instance *instance, kiln_robotmodel_chain_info *info, char *message,
                       size_t message_size);

  /* Fill *joint (up to joint->struct_size) for joint index (0 .. dof-1, base to tip).
   * [any-thread] [control-thread: real-time safe]
   * KILN_ERR_INVALID_ARGUMENT when instance or joint is NULL, joint->struct_size is 0 or
   * index >= dof. */
  kiln_status (*joint)(const kiln_instance *instance, uint32_t index, kiln_robotmodel_joint *joint, char *message,
                       size_t message_size);

  /* Forward kinematics: for each of the count joint vectors in q (count * dof doubles) write the tip
   * pose in the base frame into poses (count * KILN_ROBOTMODEL_POSE_SIZE doubles). Joint values are
   * used as given (no clamping, no wrapping); a non-finite value gives a non-finite pose. count 0
   * does nothing (q and poses may then be NULL).
   * [any-thread] [control-thread: real-time safe] (O(count * dof) work)
   * KILN_ERR_INVALID_ARGUMENT when instance is NULL, q or poses is NULL with count > 0, or
   * count > KILN_ROBOTMODEL_MAX_COUNT. */
  kiln_status (*fk)(const kiln_instance *instance, const double *q, uint32_t count, double *poses, char *message,
                    size_t message_size);

  /* Inverse dynamics (recursive Newton-Euler): for each of the count states (q, qd, qdd; count * dof
   * doubles each) write the joint torques M(q) qdd + C(q, qd) qd + G(q) under the chain's gravity
   * (kiln_robotmodel_chain_info.gravity) into tau (count * dof doubles). No friction, damping or
   * rotor inertia; bodies on branches off the chain are not included. count 0 does nothing.
   * [any-thread] [control-thread: real-time safe] (O(count * dof) work)
   * KILN_ERR_UNSUPPORTED when the plugin has no dynamics (chain_info.has_rnea 0).
   * KILN_ERR_INVALID_ARGUMENT when instance is NULL, a buffer is NULL with count > 0, or
   * count > KILN_ROBOTMODEL_MAX_COUNT. */
  kiln_status (*rnea)(const kiln_instance *instance, const double *q, const double *qd, const double *qdd,
                      uint32_t count, double *tau, char *message, size_t message_size);
} kiln_robotmodel_v1;

#ifdef __cplusplus
}
#endif

#endif
