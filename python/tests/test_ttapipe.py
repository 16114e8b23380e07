"""The Python package against the C library and the command (pytest).

Environment (ctest's test_python sets it): TTAPIPE_LIBRARY (the library under test),
TTAPIPE_CLI (the ttapipe command of the same build), TTAPIPE_SOURCE (the repository), and
TTAPIPE_ENGINE (cpu, or a GPU engine on the GPU machine; default cpu).
"""
import os
import subprocess
import threading
import time

import numpy as np
import pytest

import ttapipe

SOURCE = os.environ.get("TTAPIPE_SOURCE", os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL = os.path.join(SOURCE, "models", "lenet-mnist")
RGB = os.path.join(SOURCE, "tests", "onnx", "rgb-stride.onnx")
ENGINE = os.environ.get("TTAPIPE_ENGINE", "cpu")


def random_images(n, shape=(28, 28), seed=5):
    return np.random.default_rng(seed).integers(0, 256, size=(n,) + shape, dtype=np.uint8)


def write_pgm(path, pixels):
    with open(path, "wb") as f:
        f.write(b"P5\n%d %d\n255\n" % (pixels.shape[1], pixels.shape[0]) + pixels.tobytes())


def test_classify_matches_the_command(tmp_path):
    """The same images as PGM files through `ttapipe classify` and as an array through
    classify: the same classes and labels, and the probabilities the command prints (7
    decimals) are the array's rounded; classify_files gives the array's results bit for bit."""
    images = random_images(37)
    paths = []
    for i, image in enumerate(images):
        paths.append(str(tmp_path / f"{i:03d}.pgm"))
        write_pgm(paths[-1], image)
    cli = subprocess.run([os.environ["TTAPIPE_CLI"], "classify", "--model", MODEL, "--tta", "5",
                          "--invert", "no", "--engine", ENGINE, "--quiet", str(tmp_path)],
                         check=True, capture_output=True, text=True).stdout.splitlines()
    with ttapipe.Pipeline(MODEL, tta=5, engine=ENGINE) as p:
        r = p.classify(images, matrix=True)
        f = p.classify_files([str(tmp_path)], invert="no")
    rows = [line.split(",") for line in cli[1:]]
    assert [row[0] for row in rows] == paths and f.paths == paths
    assert [int(row[2]) for row in rows] == list(r.classes)
    assert [row[3] for row in rows] == [r.labels[c] for c in r.classes]
    assert [row[4] for row in rows] == ["%.7f" % p for p in r.probabilities]
    assert np.array_equal(f.classes, r.classes)
    assert f.probabilities.tobytes() == r.probabilities.tobytes()
    assert f.spreads.tobytes() == r.spreads.tobytes()
    assert r.matrix.shape == (37, 10) and r.classes.dtype == np.int64
    assert np.array_equal(np.argmax(r.matrix, axis=1), r.classes)
    assert np.array_equal(r.matrix[np.arange(37), r.classes], r.probabilities)


def test_shapes_and_channels():
    """(n, h, w) and (n, 1, h, w) are the same images; an RGB model takes (n, 3, h, w)."""
    images = random_images(9)
    with ttapipe.Pipeline(MODEL, engine=ENGINE) as p:
        a, b = p.classify(images), p.classify(images[:, None])
        assert a.probabilities.tobytes() == b.probabilities.tobytes()
        assert len(p.classify(images[:0])) == 0
    # The fused engine runs LeNet's shape alone: the RGB net on the others.
    with ttapipe.Pipeline(RGB, tta=3, engine="auto" if ENGINE == "fused" else ENGINE) as p:
        assert p.input_shape == (3, 32, 32) and p.labels[0] == "airplane"
        r = p.classify(random_images(5, (3, 32, 32)))
        assert len(r) == 5 and all(0 <= c < 10 for c in r.classes)


def test_layouts_read_the_same_images():
    """One set of images in every layout classify takes, and through the array protocols:
    the same bits as contiguous NCHW; a single image as a batch of one."""
    with ttapipe.Pipeline(MODEL, tta=3, engine=ENGINE) as p:
        grey = random_images(7, seed=11)
        want = p.classify(grey[:, None], matrix=True).matrix.tobytes()
        for images, layout in [(grey, None), (grey[..., None], None), (grey, "nhw"),
                               (np.asfortranarray(grey), None),  # not C-contiguous: copied
                               (memoryview(grey), None)]:  # the buffer protocol
            assert p.classify(images, matrix=True, layout=layout).matrix.tobytes() == want
        one = p.classify(grey[:1], matrix=True).matrix.tobytes()
        for single in [grey[0], grey[0][None], grey[0][..., None]]:
            assert p.classify(single, matrix=True).matrix.tobytes() == one

        class Image:  # as PIL shows an image: __array_interface__ over its own bytes
            def __init__(self, pixels):
                self.pixels = pixels
                self.__array_interface__ = pixels.__array_interface__
        assert p.classify(Image(grey[0]), matrix=True).matrix.tobytes() == one
    with ttapipe.Pipeline(RGB, tta=3, engine="auto" if ENGINE == "fused" else ENGINE) as p:
        rgb = random_images(5, (3, 32, 32), seed=12)
        want = p.classify(rgb, matrix=True).matrix.tobytes()
        hwc = np.ascontiguousarray(rgb.transpose(0, 2, 3, 1))
        assert p.classify(hwc, matrix=True).matrix.tobytes() == want
        assert p.classify(hwc, matrix=True, layout="nhwc").matrix.tobytes() == want
        assert p.classify(rgb.transpose(0, 2, 3, 1), matrix=True).matrix.tobytes() == want
        one = p.classify(rgb[:1], matrix=True).matrix.tobytes()
        assert p.classify(rgb[0], matrix=True).matrix.tobytes() == one
        assert p.classify(hwc[0], matrix=True).matrix.tobytes() == one
        with pytest.raises(ValueError, match="shape"):
            p.classify(rgb[:, 0])  # one channel of three


def test_ambiguous_layouts_are_refused():
    """Where channels first and channels last both fit the model's input (3 x 3 x 3 here) they
    read different images: refused unless the layout is named."""
    cube = random_images(2, (3, 3, 3))
    with pytest.raises(ValueError, match="pass layout="):
        ttapipe._nchw(cube, (3, 3, 3), None)
    as_nhwc = ttapipe._nchw(cube, (3, 3, 3), "nhwc")
    assert np.array_equal(as_nhwc, cube.transpose(0, 3, 1, 2))
    assert np.array_equal(ttapipe._nchw(cube, (3, 3, 3), "nchw"), cube)


def test_bad_inputs_raise_before_work():
    with ttapipe.Pipeline(MODEL, engine=ENGINE) as p:
        with pytest.raises(ValueError, match="uint8"):
            p.classify(random_images(3).astype(np.float32))
        with pytest.raises(ValueError, match="shape"):
            p.classify(random_images(3, (27, 28)))
        with pytest.raises(ValueError, match="shape"):
            p.classify(random_images(3, (3, 28, 28)))
        with pytest.raises(ValueError, match="uint8"):  # a list holds Python ints
            p.classify([[0] * 28] * 28)
        with pytest.raises(ValueError, match="must be an array"):
            p.classify(object())
        with pytest.raises(ValueError, match="layout must be one of"):
            p.classify(random_images(3), layout="nwh")
        with pytest.raises(ValueError, match=r"as nhwc"):
            p.classify(random_images(3), layout="nhwc")

        class OnGpu:  # what a CUDA array shows, refused before any work
            __cuda_array_interface__ = {"shape": (3, 28, 28), "typestr": "|u1", "version": 3,
                                        "data": (0, False)}
        with pytest.raises(ValueError, match="GPU"):
            p.classify(OnGpu())
    with pytest.raises(ValueError, match="engine"):
        ttapipe.Pipeline(MODEL, engine="quantum")


def test_errors_carry_the_library_message(tmp_path):
    missing = str(tmp_path / "nowhere")
    with pytest.raises(ttapipe.Error, match="nowhere"):
        ttapipe.Pipeline(missing)
    with pytest.raises(ttapipe.Error, match="TTA copies must be 1..64"):
        ttapipe.Pipeline(MODEL, tta=65)
    bad = tmp_path / "bad.pgm"
    bad.write_bytes(b"P5\n28 28\n255\n" + b"\x00" * 100)  # truncated
    write_pgm(str(tmp_path / "good.pgm"), random_images(1)[0])
    with ttapipe.Pipeline(MODEL, engine=ENGINE) as p:
        f = p.classify_files([str(bad), str(tmp_path / "good.pgm")])
    assert f.classes[0] == -1 and np.isnan(f.probabilities[0]) and "bad.pgm" in f.errors[0]
    assert f.errors[1] is None and 0 <= f.classes[1] < 10


def test_python_runs_during_a_classification():
    """While one thread is inside classify, another runs Python code: the GIL is released."""
    images = random_images(400)
    with ttapipe.Pipeline(MODEL, engine="cpu", threads=1) as p:
        done = threading.Event()
        worker = threading.Thread(target=lambda: (p.classify(images), done.set()))
        counted = 0
        worker.start()
        while not done.is_set():
            counted += 1
        worker.join()
    assert counted > 10000, f"the main thread ran {counted} loops during the call"


def test_two_threads_classify_at_once():
    """Two threads with a pipeline each (one CPU thread each) finish sooner together than one
    after the other: the library runs without the GIL."""
    if ENGINE != "cpu":
        pytest.skip("measured with the CPU engine, whose time is the threads' own")
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core")
    images = random_images(1500)
    pipelines = [ttapipe.Pipeline(MODEL, engine="cpu", threads=1) for _ in range(2)]
    for p in pipelines:  # warm
        p.classify(images[:10])

    def run(p):
        p.classify(images)

    best = None
    for _ in range(3):
        start = time.perf_counter()
        for p in pipelines:
            run(p)
        serial = time.perf_counter() - start
        threads = [threading.Thread(target=run, args=(p,)) for p in pipelines]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        together = time.perf_counter() - start
        best = together / serial if best is None else min(best, together / serial)
        if best < 0.85:
            break
    for p in pipelines:
        p.close()
    print(f"two threads at once took {best:.2f} of the time one after the other")
    assert best < 0.85


def test_version_and_close():
    assert ttapipe.version() == ttapipe.__version__
    p = ttapipe.Pipeline(MODEL, engine=ENGINE)
    assert "tta 1 copy" in p.description
    p.close()
    with pytest.raises(ValueError, match="closed"):
        p.classify(random_images(1))


def test_examples_run(tmp_path):
    """python/examples: each runs with the installed package and prints what it says it does."""
    import sys
    examples = os.path.join(SOURCE, "python", "examples")
    digits = random_images(3, seed=13)
    for i, image in enumerate(digits):
        write_pgm(str(tmp_path / f"{i}.pgm"), image)
    (tmp_path / "broken.pgm").write_bytes(b"P5\n28 28\n255\n")
    out = subprocess.run([sys.executable, os.path.join(examples, "classify_directory.py"), MODEL,
                          str(tmp_path), "--engine", ENGINE], check=True, capture_output=True,
                         text=True).stdout.splitlines()
    assert out[-1] == "3 of 4 files classified" and len(out) == 5
    assert sum(",error," in line for line in out) == 1
    mnist = os.path.join(SOURCE, "..", "shared", "datasets", "mnist", "t10k-images-idx3-ubyte.gz")
    idx = [mnist] if os.path.exists(mnist) else []
    out = subprocess.run([sys.executable, os.path.join(examples, "classify_numpy.py"), MODEL]
                         + idx + ["--count", "4"], check=True, capture_output=True,
                         text=True).stdout.splitlines()
    assert len(out) == 5 and all(line.startswith(f"image {i}: ") for i, line in
                                 enumerate(out[1:]))

