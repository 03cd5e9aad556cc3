"""Wrong arguments to any public call of the binding as kiln.ArgumentTypeError.

pybind11 answers a call whose arguments match none of a function's signatures with a plain
TypeError, "f(): incompatible function arguments. The following argument types are supported:
...". Every public function, method and constructor of kiln._kiln is wrapped here, in one place,
so that this failure becomes a kiln.ArgumentTypeError naming the call, the parameter, what it
expects and what it got (or the unknown keyword and the accepted ones). The signatures come from
pybind11's own message at the moment of the failure, so they never drift from the binding.

Only pybind11's overload-resolution failure of the wrapped call itself is translated: a TypeError
raised deeper (in Python code kiln calls back, such as a path's __fspath__ or a progress
callback) carries frames below the wrapper and passes through unchanged. kiln's own argument
errors (the binding's checks of what it takes as an object: paths, recipes, archs, arrays) keep
their class and text, with the call's name put in front.
"""

import difflib
import functools
import os
import re
import sys

_FAILURE = re.compile(
    r"(?P<name>\w+)\(\): incompatible (?:function|constructor) arguments\. "
    r"The following argument types are supported:\n(?P<signatures>(?:[ \t]+\d+\. .*\n)+)")
_NO_CONSTRUCTOR = re.compile(r"[\w.]+: No constructor defined!")
_SIGNATURE_LINE = re.compile(r"[ \t]+\d+\. (?P<signature>.*)")
_CHECKED = ()  # kiln's own argument errors (install() sets them)


class _Parameter:
    __slots__ = ("name", "type", "has_default", "keyword_only", "positional_only")

    def __init__(self, name, type_text, has_default):
        self.name, self.type, self.has_default = name, type_text, has_default
        self.keyword_only = self.positional_only = False


def _split_top_level(text, separator=","):
    """text split at separator outside brackets and quotes."""
    parts, depth, quote, start = [], 0, None, 0
    for index, char in enumerate(text):
        if quote:
            if char == quote and text[index - 1] != "\\":
                quote = None
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == separator and depth == 0:
            parts.append(text[start:index].strip())
            start = index + 1
    tail = text[start:].strip()
    if tail:
        parts.append(tail)
    return parts


def _parameters(signature):
    """The parameters of one pybind11 signature: "(self: X, a: int = 0, *, b: str = '') -> R", or
    a constructor's "kiln._kiln.X(a: int = 0)"."""
    signature = signature[signature.find("("):]
    depth = 0
    for end, char in enumerate(signature):
        depth += char in "([{"
        depth -= char in ")]}"
        if depth == 0:
            break
    parameters, keyword_only = [], False
    for part in _split_top_level(signature[1:end]):
        if part == "*":
            keyword_only = True
            continue
        if part == "/":
            for parameter in parameters:
                parameter.positional_only = True
            continue
        if part.startswith("*"):  # *args, **kwargs: anything goes
            return None
        head, equals, _ = part.partition(" = ")
        name, _, type_text = head.partition(":")
        parameter = _Parameter(name.strip(), type_text.strip() or "object", bool(equals))
        parameter.keyword_only = keyword_only
        parameters.append(parameter)
    return parameters


def _generic(type_text):
    """"List[str]" -> ("List", ["str"]); "str" -> ("str", [])."""
    head, bracket, rest = type_text.partition("[")
    if not bracket or not rest.endswith("]"):
        return type_text.strip(), []
    return head.strip(), _split_top_level(rest[:-1])


def _resolve(dotted):
    module_name, _, attribute = dotted.rpartition(".")
    module = sys.modules.get(module_name or "builtins")
    value = getattr(module, attribute, None) if module is not None else None
    return value if isinstance(value, type) else None


def _accepts(type_text, value):
    """Whether pybind11 could convert value to type_text: True, False, or None (cannot tell)."""
    head, arguments = _generic(type_text)
    if head in ("object", "Any", "handle", "args", "kwargs"):
        return True
    if head == "None":
        return value is None
    if head == "Optional":
        return True if value is None else _accepts(arguments[0], value)
    if head == "Union":
        answers = [_accepts(argument, value) for argument in arguments]
        return True if True in answers else (None if None in answers else False)
    if head == "bool":  # pybind11 takes None and what has a numeric truth value (not str)
        return value is None or isinstance(value, (bool, int, float)) or type(value).__name__ == "bool_"
    if head == "int":
        return not isinstance(value, float) and (isinstance(value, int) or hasattr(type(value), "__index__"))
    if head == "float":
        return isinstance(value, (int, float)) or hasattr(type(value), "__float__") or hasattr(type(value), "__index__")
    if head in ("str", "bytes"):
        return isinstance(value, (str, bytes))
    if head in ("os.PathLike", "PathLike"):
        return isinstance(value, (str, bytes, os.PathLike))
    if head in ("List", "list", "Sequence", "Set", "set", "Iterable"):
        if isinstance(value, (str, bytes, dict)) or not isinstance(value, (list, tuple, set, frozenset)):
            return False
        answers = [_accepts(arguments[0], item) for item in value] if arguments else []
        return False if False in answers else (None if None in answers else True)
    if head in ("Dict", "dict"):
        if not isinstance(value, dict):
            return False
        if len(arguments) != 2:
            return None
        answers = [_accepts(arguments[0], k) for k in value] + [_accepts(arguments[1], v) for v in value.values()]
        return False if False in answers else (None if None in answers else True)
    if head in ("Callable", "function"):
        return callable(value)
    cls = _resolve(head)
    if cls is not None and not head.startswith("numpy."):
        return isinstance(value, cls)
    return None  # numpy arrays, chrono durations and the like: pybind11's conversions are wider


def _spelled(type_text):
    """A type as a reader writes it: "kiln.Module", "str or None", "a list of str"."""
    head, arguments = _generic(type_text)
    if head == "Optional":
        return _spelled(arguments[0]) + " or None"
    if head == "Union":
        return " or ".join(_spelled(argument) for argument in arguments)
    if head in ("os.PathLike", "PathLike"):
        return "a path (str or os.PathLike)"
    if head in ("List", "list", "Sequence", "Iterable", "Set", "set"):
        return "a list of " + _spelled(arguments[0]) if arguments else "a list"
    if head in ("Dict", "dict") and len(arguments) == 2:
        return "a dict of " + _spelled(arguments[0]) + " to " + _spelled(arguments[1])
    if head.startswith("kiln._kiln."):
        return "kiln." + head[len("kiln._kiln."):]
    if head in ("object", "handle"):
        return "any object"
    return type_text


def _describe(value, element_type=None):
    """What an argument is: "int", "numpy.ndarray of shape (3,) and dtype float64"; with
    element_type, a container names its first element that does not fit."""
    if element_type is not None:
        head, arguments = _generic(element_type)
        if head in ("Dict", "dict") and len(arguments) == 2 and isinstance(value, dict):
            for key, item in value.items():
                if _accepts(arguments[0], key) is False:
                    return f"dict with a key of type {_describe(key)}"
                if _accepts(arguments[1], item) is False:
                    return f"dict whose {key!r} is {_describe(item)}"
        if head in ("List", "list", "Sequence") and arguments and isinstance(value, (list, tuple)):
            for index, item in enumerate(value):
                if _accepts(arguments[0], item) is False:
                    return f"{type(value).__name__} whose item {index} is {_describe(item)}"
    cls = type(value)
    module = getattr(cls, "__module__", "builtins")
    text = cls.__qualname__ if module == "builtins" else module.replace("kiln._kiln", "kiln") + "." + cls.__qualname__
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        text += f" of shape {value.shape} and dtype {value.dtype}"
    return text


def _problem(parameters, args, kwargs):
    """What is wrong with args/kwargs for one signature (args without self), or None."""
    positional = [p for p in parameters if not p.keyword_only]
    names = [p.name for p in parameters]
    if len(args) > len(positional):
        taken = ", ".join(p.name for p in positional) or "none"
        return f"takes {len(positional)} positional argument(s) ({taken}), got {len(args)}"
    bound = dict(zip((p.name for p in positional), args))
    for keyword, value in kwargs.items():
        parameter = next((p for p in parameters if p.name == keyword), None)
        if parameter is None or parameter.positional_only:
            close = difflib.get_close_matches(keyword, names, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            accepted = ", ".join(p.name for p in parameters if not p.positional_only) or "none"
            return f"unknown keyword argument {keyword!r}{hint}; it takes: {accepted}"
        if keyword in bound:
            return f"got {keyword!r} twice (by position and by keyword)"
        bound[keyword] = value
    for parameter in parameters:
        if parameter.name not in bound and not parameter.has_default:
            return f"missing argument {parameter.name!r} ({_spelled(parameter.type)})"
    undecided = []
    for parameter in parameters:
        if parameter.name in bound:
            answer = _accepts(parameter.type, bound[parameter.name])
            if answer is False:
                got = _describe(bound[parameter.name], parameter.type)
                return f"{parameter.name}: expected {_spelled(parameter.type)}, got {got}"
            if answer is None:
                undecided.append(parameter)
    if undecided:
        return "; ".join(f"{p.name}: expected {_spelled(p.type)}, got {_describe(bound[p.name])}" for p in undecided)
    return None


def _explain(qualname, signatures, is_method, args, kwargs):
    problems = []
    for signature in signatures:
        parameters = _parameters(signature)
        if parameters is None:
            continue
        if is_method and parameters and parameters[0].name == "self":
            parameters = parameters[1:]
        problem = _problem(parameters, args[1:] if is_method else args, kwargs)
        if problem and problem not in problems:
            problems.append(problem)
    if not problems:
        got = ", ".join([_describe(a) for a in (args[1:] if is_method else args)] +
                        [f"{k}={_describe(v)}" for k, v in kwargs.items()])
        problems.append(f"arguments ({got}) do not fit {' or '.join(signatures)}")
    return f"{qualname}(): " + "; or ".join(problems)


def wrap(function, qualname, is_method, error_class):
    """function, raising error_class instead of pybind11's failure to match its arguments."""

    @functools.wraps(function)
    def call(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except _CHECKED as error:
            # kiln's own argument checks name the parameter; the call's name goes in front, once.
            if not getattr(error, "call", None) and error.args and isinstance(error.args[0], str):
                text = error.args[0]
                if text.startswith(function.__name__ + ": "):  # "solve: out: ..." names the call already
                    text = text[len(function.__name__) + 2:]
                error.args = (f"{qualname}(): {text}",) + error.args[1:]
                error.call = qualname
            raise
        except TypeError as error:
            # Only pybind11's own refusal of this very call: a plain TypeError raised with no
            # Python frame below this one, whose text names this function.
            if type(error) is not TypeError or error.__traceback__.tb_next is not None:
                raise
            if function.__name__ == "__init__" and _NO_CONSTRUCTOR.fullmatch(str(error)):
                cls = qualname.partition(".")[0]
                raise error_class(f"{cls}(): a kiln.{cls} is not made directly: kiln's calls return one "
                                  f"(see help(kiln.{cls}))") from None
            match = _FAILURE.match(str(error))
            if match is None or match.group("name") != function.__name__:
                raise
            signatures = [_SIGNATURE_LINE.match(line).group("signature")
                          for line in match.group("signatures").splitlines()]
            raise error_class(_explain(qualname, signatures, is_method, args, kwargs)) from None

    return call


def install(extension, error_class):
    """Wraps every function of extension and every method of its classes (except exceptions)."""
    global _CHECKED
    _CHECKED = (extension.ArgumentTypeError, extension.ArgumentValueError)
    for name in dir(extension):
        value = getattr(extension, name)
        if type(value).__name__ == "builtin_function_or_method" and getattr(value, "__module__", None) == extension.__name__:
            setattr(extension, name, wrap(value, name, False, error_class))
        elif isinstance(value, type) and not issubclass(value, BaseException) and value.__module__ == extension.__name__:
            for attribute, member in list(vars(value).items()):
                if isinstance(member, staticmethod):
                    setattr(value, attribute, staticmethod(wrap(member.__func__, f"{name}.{attribute}", False, error_class)))
                elif type(member).__name__ == "instancemethod" or (
                        attribute == "__init__" and type(member).__name__ == "wrapper_descriptor"):  # no py::init
                    function = getattr(member, "__func__", member)
                    setattr(value, attribute, wrap(function, f"{name}.{attribute}", True, error_class))
    return extension


__all__ = ["install", "wrap"]
