// The robot models a plugin was generated from, as the plugin file itself holds them: each header
// kiln-urdf-fk writes puts the canonical text of its model (the text the model's fingerprint
// digests) into the section .kiln.model of every object that includes it. The fingerprint an
// entry records is a claim this section must back, as its archs are a claim its fat binaries must.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <kiln/identity.hpp>

namespace kiln::artifact {

inline constexpr std::string_view kModelSection = ".kiln.model";

struct ModelRecord {
  RobotModel model;  // fingerprint and chain
  std::string text;  // the canonical text, a line per link and joint
};

// The distinct models in `bytes`' .kiln.model section, ordered by fingerprint (a plugin of two
// chains holds two); empty when the file has no such section (not generated from a URDF).
// Throws IntegrityError naming `file` for a section that is cut off or holds anything but model
// texts.
std::vector<ModelRecord> read_model_records(std::string_view bytes, const std::string &file);

// The models of read_model_records without their texts (what identity.json records).
std::vector<RobotModel> read_models(std::string_view bytes, const std::string &file);
// "xxh128:... (base -> tip), ..." for messages; "none" for no model.
std::string describe_models(const std::vector<RobotModel> &models);

// "xxh128:<32 hex digits>" of a canonical model text (what kiln-urdf-fk --check prints).
std::string model_fingerprint_of(std::string_view text);
// The "chain <base> -> <tip>" line's value of a canonical model text; empty when there is none.
std::string model_chain_of(std::string_view text);
// The "gravity <x> <y> <z>" line's value: the gravity of a model with dynamics; empty for a
// kinematic model (generated without dynamics).
std::string model_gravity_of(std::string_view text);

// The first line where two canonical texts differ, as "line N: <a's line> | <b's line>" with each
// side named by `a_name` and `b_name`; empty when they are equal.
std::string first_model_difference(std::string_view a, std::string_view b, const std::string &a_name,
                                   const std::string &b_name);

// For an entry already recorded (kiln verify, import, remote fetch): the models identity.json
// records must be exactly those the file holds. IntegrityError naming the file and both lists.
void check_recorded_models(std::string_view bytes, const std::vector<RobotModel> &recorded, const std::string &file);

}  // namespace kiln::artifact
