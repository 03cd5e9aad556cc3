/* kiln plugin ABI: header-only C++ helper for plugin authors.
 *
 * Write an instance class and one macro; the helper supplies the build stamp, the entry
 * table, the negotiation function and the C trampolines that keep every C++ exception on
 * the plugin's side of the boundary (functions with a status return KILN_ERR_INTERNAL or
 * KILN_ERR_OUT_OF_MEMORY with the exception's what() as message; deactivate and get_interface
 * log it through the host and carry on):
 *
 *   class Solver final : public kiln::plugin::Instance {
 *    public:
 *     using Instance::Instance;
 *     kiln_status activate(const kiln_activate_params &p, kiln::plugin::Message &m) override;
 *     void deactivate() noexcept override;
 *     const void *get_interface(const char *id) const noexcept override;
 *   };
 *   KILN_PLUGIN(Solver, "org.example.solver", "1.2.0", "kiln.ik/1")
 *
 * Build the plugin with -fvisibility=hidden (only kiln_plugin_negotiate is exported), without
 * gnu-unique symbols (-fno-gnu-unique) and without thread_local objects that have destructors,
 * so that unloading really unmaps it. A plugin may override the ABI range it offers by
 * defining KILN_PLUGIN_ABI_MIN / KILN_PLUGIN_ABI_MAX before including this header.
 */
#ifndef KILN_ABI_PLUGIN_HPP
#define KILN_ABI_PLUGIN_HPP

#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>

#include "plugin.h"

#ifndef KILN_PLUGIN_ABI_MIN
#define KILN_PLUGIN_ABI_MIN KILN_ABI_MAKE_VERSION(KILN_ABI_VERSION_MAJOR, 0)
#endif
#ifndef KILN_PLUGIN_ABI_MAX
#define KILN_PLUGIN_ABI_MAX KILN_ABI_VERSION
#endif

/* Variadic: __CUDA_ARCH_LIST__ holds commas when several archs are compiled ("870,900"). */
#define KILN_PLUGIN_STRINGIFY_(...) #__VA_ARGS__
#define KILN_PLUGIN_STRINGIFY(...) KILN_PLUGIN_STRINGIFY_(__VA_ARGS__)
#ifdef __CUDA_ARCH_LIST__
#define KILN_PLUGIN_ARCHS KILN_PLUGIN_STRINGIFY(__CUDA_ARCH_LIST__)
#else
#define KILN_PLUGIN_ARCHS ""
#endif

namespace kiln {
namespace plugin {

/* The caller's message buffer. Writing truncates and always NUL-terminates. */
class Message {
 public:
  Message(char *data, size_t size) noexcept : data_(data), size_(size) {}
  void set(const char *text) noexcept {
    if (data_ == nullptr || size_ == 0) return;
    std::snprintf(data_, size_, "%s", text);
  }
#if defined(__GNUC__)
  __attribute__((format(printf, 2, 3)))
#endif
  void format(const char *fmt, ...) noexcept {
    if (data_ == nullptr || size_ == 0) return;
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(data_, size_, fmt, args);
    va_end(args);
  }

 private:
  char *data_;
  size_t size_;
};

/* Base of a plugin's instance class. One object per kiln_instance. */
class Instance {
 public:
  explicit Instance(const kiln_host_services *host) noexcept : host_(host) {}
  virtual ~Instance() = default;
  Instance(const Instance &) = delete;
  Instance &operator=(const Instance &) = delete;

  /* [setup-thread] Reserve what later calls need. Throwing is allowed: the helper turns
   * std::bad_alloc into KILN_ERR_OUT_OF_MEMORY and any other exception into KILN_ERR_INTERNAL. */
  virtual kiln_status activate(const kiln_activate_params &params, Message &message) {
    (void)params;
    (void)message;
    return KILN_OK;
  }
  /* [setup-thread] Release what activate took. Should not throw; if it does, the helper logs the
   * exception through the host and carries on (the ABI's deactivate returns nothing). */
  virtual void deactivate() {}
  /* [any-thread] The table for interface_id, or nullptr. Should not throw; if it does, the helper
   * logs the exception through the host and answers nullptr. */
  virtual const void *get_interface(const char *interface_id) const = 0;
  /* [setup-thread] State for hot swap; unsupported unless overridden. */
  virtual kiln_status export_state(void *buffer, size_t capacity, size_t *size, Message &message) const {
    (void)buffer, (void)capacity, (void)size;
    message.set("this plugin keeps no state to export");
    return KILN_ERR_UNSUPPORTED;
  }
  virtual kiln_status import_state(const void *blob, size_t size, Message &message) {
    (void)blob, (void)size;
    message.set("this plugin keeps no state to import");
    return KILN_ERR_UNSUPPORTED;
  }

  /* [any-thread, not real-time safe] Log through the host. */
  void log(int32_t level, const char *text) const noexcept {
    if (host_ != nullptr && host_->log != nullptr) host_->log(host_, level, text);
  }
  const kiln_host_services *host() const noexcept { return host_; }
  bool active() const noexcept { return active_; }

  /* The C handle of this object and back. */
  kiln_instance *handle() noexcept { return reinterpret_cast<kiln_instance *>(this); }
  template <class T>
  static T &from(kiln_instance *instance) noexcept {
    return static_cast<T &>(*reinterpret_cast<Instance *>(instance));
  }
  template <class T>
  static const T &from(const kiln_instance *instance) noexcept {
    return static_cast<const T &>(*reinterpret_cast<const Instance *>(instance));
  }

 private:
  template <class T>
  friend struct Glue;
  const kiln_host_services *host_;
  bool active_ = false;
};

/* C trampolines for instance class T. */
template <class T>
struct Glue {
  static Instance *self(kiln_instance *instance) noexcept { return reinterpret_cast<Instance *>(instance); }
  static const Instance *self(const kiln_instance *instance) noexcept {
    return reinterpret_cast<const Instance *>(instance);
  }

  template <class F>
  static kiln_status guarded(Message &message, F &&body) noexcept {
    try {
      return body();
    } catch (const std::bad_alloc &) {
      message.set("out of host memory");
      return KILN_ERR_OUT_OF_MEMORY;
    } catch (const std::exception &error) {
      message.set(error.what());
      return KILN_ERR_INTERNAL;
    } catch (...) {
      message.set("unknown exception in plugin");
      return KILN_ERR_INTERNAL;
    }
  }

  /* For the functions the ABI gives no status: an exception is logged through the host (when it
   * offers a log) and swallowed, so that it never crosses into the host. */
  template <class F>
  static void logged(const Instance *object, const char *function, F &&body) noexcept {
    char text[512];
    try {
      body();
      return;
    } catch (const std::exception &error) {
      std::snprintf(text, sizeof text, "%s threw: %s", function, error.what());
    } catch (...) {
      std::snprintf(text, sizeof text, "%s threw an exception of unknown type", function);
    }
    if (object != nullptr) object->log(KILN_LOG_ERROR, text);
  }

  static kiln_status create(const kiln_create_params *params, kiln_instance **instance, char *msg,
                            size_t msg_size) noexcept {
    Message message(msg, msg_size);
    if (instance == nullptr) return KILN_ERR_INVALID_ARGUMENT;
    *instance = nullptr;
    if (params == nullptr || params->struct_size < offsetof(kiln_create_params, host) + sizeof params->host) {
      message.set("create: params missing or too small");
      return KILN_ERR_INVALID_ARGUMENT;
    }
    return guarded(message, [&] {
      *instance = (new T(params->host))->handle();
      return KILN_OK;
    });
  }
  static kiln_status activate(kiln_instance *instance, const kiln_activate_params *params, char *msg,
                              size_t msg_size) noexcept {
    Message message(msg, msg_size);
    if (instance == nullptr || params == nullptr) return KILN_ERR_INVALID_ARGUMENT;
    Instance *object = self(instance);
    if (object->active_) {
      message.set("activate: instance is already active; deactivate it first");
      return KILN_ERR_STATE;
    }
    kiln_activate_params copy{};
    std::memcpy(&copy, params, params->struct_size < sizeof copy ? params->struct_size : sizeof copy);
    copy.struct_size = sizeof copy;
    if ((copy.flags & ~static_cast<uint64_t>(KILN_ACTIVATE_IN_CURRENT_CONTEXT)) != 0) {
      message.format("activate: flags 0x%llx name a request this plugin's kiln headers do not know; rebuild it "
                     "against the host's headers",
                     static_cast<unsigned long long>(copy.flags));
      return KILN_ERR_UNSUPPORTED;
    }
    const kiln_status status = guarded(message, [&] { return object->activate(copy, message); });
    if (status == KILN_OK) {
      object->active_ = true;
    } else {
      logged(object, "deactivate", [&] { object->deactivate(); });  // a failed activate leaves nothing behind
    }
    return status;
  }
  static void deactivate(kiln_instance *instance) noexcept {
    if (instance == nullptr) return;
    Instance *object = self(instance);
    if (!object->active_) return;
    logged(object, "deactivate", [&] { object->deactivate(); });
    object->active_ = false;
  }
  static void destroy(kiln_instance *instance) noexcept {
    if (instance == nullptr) return;
    deactivate(instance);
    delete self(instance);  // destructors are noexcept: one that throws ends in std::terminate
  }
  static const void *get_interface(const kiln_instance *instance, const char *id) noexcept {
    if (instance == nullptr || id == nullptr) return nullptr;
    const void *table = nullptr;
    logged(self(instance), "get_interface", [&] { table = self(instance)->get_interface(id); });
    return table;
  }
  static kiln_status export_state(const kiln_instance *instance, void *buffer, size_t capacity, size_t *size,
                                  char *msg, size_t msg_size) noexcept {
    Message message(msg, msg_size);
    if (instance == nullptr || size == nullptr) return KILN_ERR_INVALID_ARGUMENT;
    return guarded(message, [&] { return self(instance)->export_state(buffer, capacity, size, message); });
  }
  static kiln_status import_state(kiln_instance *instance, const void *blob, size_t size, char *msg,
                                  size_t msg_size) noexcept {
    Message message(msg, msg_size);
    if (instance == nullptr || (blob == nullptr && size != 0)) return KILN_ERR_INVALID_ARGUMENT;
    return guarded(message, [&] { return self(instance)->import_state(blob, size, message); });
  }

  static constexpr kiln_plugin_entry entry(const kiln_build_stamp *stamp, const char *id, const char *version,
                                           const char *const *interface_ids) noexcept {
    return kiln_plugin_entry{sizeof(kiln_plugin_entry), stamp, id, version, interface_ids,
                             &create, &activate, &deactivate, &destroy, &get_interface,
                             &export_state, &import_state};
  }
};

/* The negotiation rule every helper-built plugin follows: the highest version both sides
 * speak, within the host's [abi_min, abi_max] and the plugin's [offer_min, offer_max]. */
inline kiln_status negotiate(const kiln_negotiation_request *request, kiln_negotiation_answer *answer,
                             const kiln_plugin_entry *entry, uint32_t offer_min, uint32_t offer_max) noexcept {
  if (request == nullptr || answer == nullptr) return KILN_ERR_INVALID_ARGUMENT;
  /* The sizes ABI 1.0 defined, not this header's sizeof: a host of an older minor sends smaller
   * structs, and fields it does not have are not needed to answer. */
  if (request->struct_size < offsetof(kiln_negotiation_request, host) + sizeof request->host) {
    return KILN_ERR_INVALID_ARGUMENT;
  }
  if (answer->struct_size < offsetof(kiln_negotiation_answer, entry) + sizeof answer->entry) {
    return KILN_ERR_INVALID_ARGUMENT;
  }
  answer->entry = nullptr;
  answer->abi_version = 0;
  const uint32_t high = request->abi_max < offer_max ? request->abi_max : offer_max;
  const uint32_t low = request->abi_min > offer_min ? request->abi_min : offer_min;
  if (high < low || KILN_ABI_VERSION_MAJOR_OF(high) != KILN_ABI_VERSION_MAJOR_OF(low)) return KILN_ERR_UNSUPPORTED;
  answer->abi_version = high;
  answer->entry = entry;
  return KILN_OK;
}

}  // namespace plugin
}  // namespace kiln

/* The stamp's initial bytes: magic, size, the newest ABI version offered (so that kiln can
 * refuse, before running any code, a plugin that offers only a major it does not speak), a key
 * slot of 32 '0', the compiled archs. */
#define KILN_PLUGIN_STAMP_INIT                                                             \
  {{'K', 'I', 'L', 'N', '-', 'B', 'U', 'I', 'L', 'D', '-', 'S', 'T', 'A', 'M', 'P'},        \
   sizeof(kiln_build_stamp), KILN_PLUGIN_ABI_MAX, "00000000000000000000000000000000", KILN_PLUGIN_ARCHS}

/* Define the plugin: InstanceType derives from kiln::plugin::Instance and is constructible from
 * const kiln_host_services*; the remaining arguments are the interface ids it offers. Use once
 * per plugin, in one source file. */
#define KILN_PLUGIN(InstanceType, plugin_id, plugin_version, ...)                                      \
  namespace {                                                                                          \
  const char *const kiln_plugin_interface_ids_[] = {__VA_ARGS__, nullptr};                             \
  /* Not const: GCC's -g output would copy a const stamp into DW_AT_const_value, a second magic. */  \
  __attribute__((used, section(".kiln_stamp"))) kiln_build_stamp kiln_plugin_stamp_ =                  \
      KILN_PLUGIN_STAMP_INIT;                                                                          \
  constexpr kiln_plugin_entry kiln_plugin_entry_ = ::kiln::plugin::Glue<InstanceType>::entry(          \
      &kiln_plugin_stamp_, plugin_id, plugin_version, kiln_plugin_interface_ids_);                     \
  }                                                                                                    \
  extern "C" KILN_PLUGIN_EXPORT kiln_status kiln_plugin_negotiate(const kiln_negotiation_request *request, \
                                                                  kiln_negotiation_answer *answer) {     \
    return ::kiln::plugin::negotiate(request, answer, &kiln_plugin_entry_, KILN_PLUGIN_ABI_MIN,          \
                                     KILN_PLUGIN_ABI_MAX);                                               \
  }

#endif
