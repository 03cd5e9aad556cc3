#include "remote/entry_verdict.hpp"

#include <kiln/errors.hpp>

#include "bundle/reader.hpp"
#include "files/files.hpp"
#include "store/storage.hpp"

namespace kiln::remote {

namespace fs = boost::filesystem;

EntryVerdict judge_entry(const store::Storage &storage, const std::string &body, const std::string &consumer,
                         const std::string &content_key, const std::string &input_key,
                         const std::vector<std::string> &trusted_keys, bool accept_unsigned,
                         std::int64_t max_lifetime_s) {
  const store::Staging staging = storage.stage(consumer, {});
  const fs::path file = staging.dir() / "judged.kbundle";
  files::write_staging_file(file, body, 0600);
  EntryVerdict verdict;
  try {
    const bundle::FetchedEntry judged = bundle::read_entry_bundle(
        storage, {file.string(), consumer, content_key, input_key, trusted_keys, false, accept_unsigned, max_lifetime_s},
        {});
    verdict.signed_by = judged.signed_by;
    verdict.expires = judged.expires;
  } catch (const Error &error) {
    // Refused: damaged or forged (IntegrityError), or of a bundle format this kiln does not read
    // (IncompatibleError). Anything else (a trusted key that cannot be read, a full disk) is no
    // verdict on the entry.
    if (error.kind() != ErrorKind::integrity && error.kind() != ErrorKind::incompatible) throw;
    // The refusal without the staging file's name (nobody can look at it) and the import's advice.
    std::string why = error.what();
    const std::string named = "bundle " + file.string() + ": ";
    if (why.rfind(named, 0) == 0) why.erase(0, named.size());
    const auto advice = why.find("; nothing was imported");
    if (advice != std::string::npos) why.erase(advice);
    verdict.refusal = why;
  }
  return verdict;
}

}  // namespace kiln::remote
