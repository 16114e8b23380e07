"""ttapipe from Python: bulk image classification with test-time augmentation.

Bindings through ctypes to libttapipe.so: the one `pip install ./python` builds into the
package, or another (python/README.md says how it is found). The C header, pipeline/ttapipe.h,
is the manual; this module mirrors its calls:

    p = ttapipe.Pipeline("models/lenet-mnist", tta=5, engine="auto")
    r = p.classify(images)              # uint8: (n, h, w), (n, c, h, w), (n, h, w, c), one image
    r.classes, r.probabilities, r.spreads, r.labels
    p.classify(images, matrix=True).matrix
    p.classify_files(["digits/"])

Every call into the library releases the GIL (ctypes does so for CDLL functions), so threads
with a pipeline each classify at the same time.
"""
import ctypes
import ctypes.util
import os
import subprocess

import numpy as np

__all__ = ["Pipeline", "Result", "FilesResult", "Error", "version", "gpu_count"]
__version__ = "0.1.0"

_ERROR_SIZE = 1024  # TTP_ERROR_SIZE
_STRUCT_ROOM = 4096  # bytes given to the library's *_init functions: more than any struct


class Error(RuntimeError):
    """A failure the library reported, with its one-line message."""


def _find_library():
    """TTAPIPE_LIBRARY if set; else the library the wheel carries beside this file; else an
    installed one (pkg-config's ttapipe, then the system's library path)."""
    path = os.environ.get("TTAPIPE_LIBRARY")
    if path:
        return path
    bundled = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libttapipe.so")
    if os.path.exists(bundled):
        return bundled
    try:
        libdir = subprocess.run(["pkg-config", "--variable=libdir", "ttapipe"], check=True,
                                capture_output=True, text=True).stdout.strip()
        candidate = os.path.join(libdir, "libttapipe.so")
        if os.path.exists(candidate):
            return candidate
    except (OSError, subprocess.CalledProcessError):
        pass
    found = ctypes.util.find_library("ttapipe")
    if found:
        return found
    raise ImportError("libttapipe.so not found: this package was installed without it (pip "
                      "install ./python builds it in); or set TTAPIPE_LIBRARY to a built "
                      "libttapipe.so")


_lib = ctypes.CDLL(_find_library())


# --- the structs, as far as this module uses them (their leading fields) ----------------------
# The library's *_init functions fill a struct of whatever size the library was built with;
# they are given _STRUCT_ROOM bytes, and these views read and set the fields they know. Fields
# added to the C structs later keep the library's defaults.

class _Tta(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("copies", ctypes.c_int),
                ("keep_original", ctypes.c_int), ("shift", ctypes.c_int),
                ("contrast_min", ctypes.c_float), ("contrast_max", ctypes.c_float),
                ("brightness_min", ctypes.c_float), ("brightness_max", ctypes.c_float),
                ("noise", ctypes.c_float), ("noise_kind", ctypes.c_int), ("clamp", ctypes.c_int),
                ("seed", ctypes.c_uint64), ("merge", ctypes.c_int)]


class _Options(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("model_dir", ctypes.c_char_p),
                ("engine", ctypes.c_int), ("threads", ctypes.c_int),
                ("tta", ctypes.c_void_p), ("device", ctypes.c_int),
                ("precision", ctypes.c_int), ("max_batch", ctypes.c_int),
                ("slots", ctypes.c_int), ("no_graph", ctypes.c_int), ("wait", ctypes.c_int),
                ("plan", ctypes.c_int), ("normalize", ctypes.c_int),
                ("mean", ctypes.c_float * 3), ("std", ctypes.c_float * 3)]


class _ModelInfo(ctypes.Structure):
    _fields_ = [("input_channels", ctypes.c_int), ("input_rows", ctypes.c_int),
                ("input_cols", ctypes.c_int), ("classes", ctypes.c_int), ("layers", ctypes.c_int),
                ("parameters", ctypes.c_longlong), ("flops", ctypes.c_double)]


class _Result(ctypes.Structure):
    _fields_ = [("class_index", ctypes.c_int), ("probability", ctypes.c_float),
                ("spread", ctypes.c_float)]


class _ImageOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("invert", ctypes.c_int),
                ("center", ctypes.c_int), ("max_width", ctypes.c_int),
                ("max_height", ctypes.c_int), ("max_file_bytes", ctypes.c_size_t),
                ("channels", ctypes.c_int)]


_RESULT_DTYPE = np.dtype([("class_index", np.int32), ("probability", np.float32),
                          ("spread", np.float32)])
assert _RESULT_DTYPE.itemsize == ctypes.sizeof(_Result)

_FileCallback = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p,
                                 ctypes.POINTER(_Result), ctypes.POINTER(ctypes.c_float),
                                 ctypes.c_char_p)


def _declare(name, restype, *argtypes):
    f = getattr(_lib, name)
    f.restype, f.argtypes = restype, list(argtypes)
    return f


_P = ctypes.c_void_p
_version = _declare("ttp_version_string", ctypes.c_char_p)
_gpu_count = _declare("ttp_gpu_count", ctypes.c_int)
_tta_init = _declare("ttp_tta_init", None, ctypes.c_void_p)
_options_init = _declare("ttp_options_init", None, ctypes.c_void_p)
_image_options_init = _declare("ttp_image_options_init", None, ctypes.c_void_p)
_open = _declare("ttp_open", ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(_P))
_close = _declare("ttp_close", None, _P)
_last_error = _declare("ttp_last_error", ctypes.c_char_p, _P)
_description = _declare("ttp_engine_description", ctypes.c_char_p, _P)
_model = _declare("ttp_model", ctypes.POINTER(_ModelInfo), _P)
_class_label = _declare("ttp_class_label", ctypes.c_char_p, _P, ctypes.c_int)
_classify = _declare("ttp_classify", ctypes.c_int, _P, ctypes.c_void_p, ctypes.c_size_t,
                     ctypes.c_void_p, ctypes.c_void_p)
_classify_paths = _declare("ttp_classify_paths", ctypes.c_int, _P,
                           ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t, ctypes.c_void_p,
                           ctypes.c_void_p, ctypes.c_int, _FileCallback, ctypes.c_void_p,
                           ctypes.c_void_p)

_ENGINES = {"auto": 0, "cpu": 1, "cudnn": 2, "fused": 4, "onednn": 5}
_precision_name = _declare("ttp_precision_name", ctypes.c_char_p, ctypes.c_int)
# The library's own names ("fp32", "fp16", "tf32"), so that a new precision needs no change here.
_PRECISIONS = {_precision_name(i).decode(): i for i in range(16) if _precision_name(i)}
_MERGES = {"mean": 0, "vote": 1, "max": 2, "gmean": 3}
_INVERT = {"auto": 0, "yes": 1, "no": 2}
_CENTER = {"none": 0, "mnist": 1}


def version():
    """The library's version, "0.1.0"."""
    return _version().decode()


def gpu_count():
    """The CUDA devices the library can use (0 without a GPU or in a CPU-only build)."""
    return _gpu_count()


def _choice(name, value, table):
    if value not in table:
        raise ValueError(f"{name} must be one of {', '.join(table)}, not {value!r}")
    return table[value]


# The layouts classify takes: each its axes' names, in the order the array holds them.
_LAYOUTS = {"nchw": "nchw", "nhwc": "nhwc", "nhw": "nhw", "chw": "chw", "hwc": "hwc", "hw": "hw"}


def _as_host_array(images):
    """images as a NumPy array without a copy where NumPy can read it in place; ValueError for
    an object it cannot read or one on a GPU."""
    if isinstance(images, np.ndarray):
        return images
    if hasattr(images, "__cuda_array_interface__"):
        raise ValueError("images on a GPU (__cuda_array_interface__): this version classifies "
                         "host arrays only; copy them to the host first")
    device = getattr(images, "__dlpack_device__", None)
    if device is not None and device()[0] != 1:  # kDLCPU
        raise ValueError("images on a GPU (DLPack): this version classifies host arrays only; "
                         "copy them to the host first")
    try:
        array = np.asarray(images)
    except (TypeError, ValueError):
        array = None
    if array is None or array.dtype == object:  # NumPy wraps what it cannot read as objects
        raise ValueError(f"images must be an array (NumPy, __array_interface__ or the buffer "
                         f"protocol), not {type(images).__name__}")
    return array


def _nchw(images, model_shape, layout):
    """images (uint8, in `layout` or the one its shape implies) as a contiguous (n, c, h, w)
    array of the model's (c, h, w); ValueError naming the problem otherwise."""
    images = _as_host_array(images)
    if images.dtype != np.uint8:
        raise ValueError(f"images must be uint8, not {images.dtype}")
    c, h, w = model_shape
    if layout is not None:
        _choice("layout", layout, _LAYOUTS)
    sizes = {"c": c, "h": h, "w": w}
    fits = []
    for k in [layout] if layout is not None else _LAYOUTS:
        dims = dict(zip(k, images.shape))
        if len(k) == images.ndim and all(dims.get(a, 1) == size for a, size in sizes.items()):
            fits.append(k)
    if not fits:
        want = f"(n, {c}, {h}, {w}) or (n, {h}, {w}, {c})"
        want += f" or (n, {h}, {w})" if c == 1 else ""
        named = f" as {layout}" if layout else ""
        raise ValueError(f"images of shape {images.shape}{named}: the model takes {want}, or one "
                         f"image of those without n")
    # Layouts that agree on where each channel's pixels lie read the same image: with one
    # channel every fit does; with more, channels first and channels last differ.
    if c > 1 and len({k.index("c") == (len(k) - 3) for k in fits}) > 1:
        raise ValueError(f"images of shape {images.shape} read as {' or '.join(fits)} differ "
                         f"for a model of {c} x {h} x {w}: pass layout=")
    k = fits[0]
    if "n" not in k:
        images, k = images[np.newaxis], "n" + k
    if "c" not in k:
        images, k = images[:, np.newaxis], "nc" + k[1:]
    return np.ascontiguousarray(images.transpose([k.index(axis) for axis in "nchw"]))


class Result:
    """One classify call's answers, numpy arrays of n: classes (int64), probabilities
    (float32: the winning class's merged probability), spreads (float32: its standard
    deviation over the augmented copies); matrix (n x classes float32) when asked for; labels:
    the model's class names (labels[classes[i]] is image i's)."""

    def __init__(self, records, matrix, labels):
        self.classes = records["class_index"].astype(np.int64)
        self.probabilities = records["probability"].copy()
        self.spreads = records["spread"].copy()
        self.matrix = matrix
        self.labels = labels

    def __len__(self):
        return len(self.classes)


class FilesResult:
    """classify_files' answers, in the files' order: paths, classes (int64, -1 for a file that
    failed), probabilities and spreads (float32, NaN for a failed file), errors (None, or the
    file's one-line error), labels."""

    def __init__(self, paths, classes, probabilities, spreads, errors, labels):
        self.paths, self.errors, self.labels = paths, errors, labels
        self.classes = np.array(classes, dtype=np.int64)
        self.probabilities = np.array(probabilities, dtype=np.float32)
        self.spreads = np.array(spreads, dtype=np.float32)

    def __len__(self):
        return len(self.paths)


class Pipeline:
    """A model opened on an engine (ttp_open): Pipeline(model, tta=5, engine="auto").

    model: a model directory (mnistCUDNN layout) or an ONNX file. tta: the augmented copies of
    each image (1: none); the augmentation's other settings as keywords (shift, contrast,
    brightness, noise, seed, merge). engine: "auto", "cpu", "onednn", "cudnn" or "fused"; precision
    "fp32", "fp16" or "tf32" (cudnn only); max_batch, slots, threads, device as ttp_options has them. Raises Error
    with the library's message when the model or the engine cannot open. A pipeline is used by
    one thread at a time; close() (or a with block) releases it at once."""

    def __init__(self, model, tta=1, engine="auto", precision="fp32", max_batch=1024, slots=3,
                 threads=0, device=0, shift=None, contrast=None, brightness=None, noise=None,
                 seed=0, merge="mean"):
        self._p = _P()
        tta_room = ctypes.create_string_buffer(_STRUCT_ROOM)
        _tta_init(tta_room)
        t = _Tta.from_buffer(tta_room)
        t.copies, t.seed, t.merge = int(tta), int(seed), _choice("merge", merge, _MERGES)
        if shift is not None:
            t.shift = int(shift)
        if contrast is not None:
            t.contrast_min, t.contrast_max = contrast
        if brightness is not None:
            t.brightness_min, t.brightness_max = brightness
        if noise is not None:
            t.noise = float(noise)
        room = ctypes.create_string_buffer(_STRUCT_ROOM)
        _options_init(room)
        o = _Options.from_buffer(room)
        self._model_path = os.fsencode(model)
        o.model_dir = self._model_path
        o.engine = _choice("engine", engine, _ENGINES)
        o.precision = _choice("precision", precision, _PRECISIONS)
        o.max_batch, o.slots, o.threads, o.device = int(max_batch), int(slots), int(threads), int(device)
        o.tta = ctypes.addressof(tta_room)
        status = _open(room, ctypes.byref(self._p))
        if status != 0:
            message = _last_error(self._p).decode(errors="replace")
            _close(self._p)
            self._p = _P()
            raise Error(message)
        info = _model(self._p).contents
        self.input_shape = (info.input_channels, info.input_rows, info.input_cols)
        self.classes = info.classes
        self.labels = [_class_label(self._p, k).decode(errors="replace")
                       for k in range(info.classes)]
        self.description = _description(self._p).decode(errors="replace")

    def close(self):
        if self._p:
            _close(self._p)
            self._p = _P()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def _check_open(self):
        if not self._p:
            raise ValueError("the pipeline is closed")

    def _raise(self):
        raise Error(_last_error(self._p).decode(errors="replace"))

    def classify(self, images, matrix=False, layout=None):
        """Classifies images, uint8, 0 black .. 255 white, of the model's channels, rows and
        columns: a NumPy array or anything NumPy reads without a copy of its own (an object with
        __array_interface__ or the buffer protocol, such as a PIL image), in one of the layouts
        "nchw" (n, c, h, w), "nhwc" (n, h, w, c), "nhw" (n, h, w: one channel), or a single
        image "chw", "hwc" or "hw". layout=None infers it from the shape and the model's input
        and refuses a shape that two layouts would read differently (name the layout then).
        Arrays other than contiguous NCHW are copied into it first. Returns a Result; with
        matrix=True its matrix holds every class's merged probability. Raises ValueError for
        another dtype, shape or layout (before any work), Error for a failure of the engine."""
        self._check_open()
        images = _nchw(images, self.input_shape, layout)
        n = images.shape[0]
        records = np.empty(n, dtype=_RESULT_DTYPE)
        probs = np.empty((n, self.classes), dtype=np.float32) if matrix else None
        if n:
            status = _classify(self._p, images.ctypes.data, n, records.ctypes.data,
                               probs.ctypes.data if matrix else None)
            if status != 0:
                self._raise()
        return Result(records, probs, self.labels)

    def classify_files(self, paths, threads=0, invert="auto", center="none"):
        """Classifies image files (PNG, JPEG, BMP, PGM/PPM) and directories (walked, sorted),
        decoded on `threads` threads (0: one per core) as ttp_classify_paths does. A file that
        cannot be read or decoded gets its error; the others go on. Returns a FilesResult."""
        self._check_open()
        if isinstance(paths, (str, bytes, os.PathLike)):
            paths = [paths]
        encoded = [os.fsencode(p) for p in paths]
        array = (ctypes.c_char_p * len(encoded))(*encoded)
        room = ctypes.create_string_buffer(_STRUCT_ROOM)
        _image_options_init(room)
        image_options = _ImageOptions.from_buffer(room)
        image_options.invert = _choice("invert", invert, _INVERT)
        image_options.center = _choice("center", center, _CENTER)
        out = ([], [], [], [], [])

        def on_file(user, index, path, result, probabilities, error):
            out[0].append(os.fsdecode(path))
            if error:
                out[1].append(-1), out[2].append(np.nan), out[3].append(np.nan)
                out[4].append(error.decode(errors="replace"))
            else:
                r = result.contents
                out[1].append(r.class_index), out[2].append(r.probability)
                out[3].append(r.spread), out[4].append(None)

        callback = _FileCallback(on_file)
        status = _classify_paths(self._p, array, len(encoded), None, room, int(threads),
                                 callback, None, None)
        if status != 0:
            self._raise()
        return FilesResult(out[0], out[1], out[2], out[3], out[4], self.labels)
