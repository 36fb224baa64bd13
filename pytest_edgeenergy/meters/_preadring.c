/* pytest_edgeenergy.meters._preadring: the native reader of the INA sampler.
 *
 * A pthread preads a fixed set of file descriptors on an absolute CLOCK_MONOTONIC schedule
 * (clock_nanosleep TIMER_ABSTIME; slot k is due at start + k x interval, overrun slots are
 * skipped, not burst) and stores each reading's raw texts in a single-producer,
 * single-consumer ring. The thread never touches the interpreter: no GIL, no Python object.
 * Python drains the ring (Reader.drain) with the GIL held and decodes the texts itself.
 *
 * A reading is stamped with CLOCK_MONOTONIC right after its preads return: the clock of
 * Python's time.monotonic() on Linux. A file whose pread failed carries its errno.
 * When the ring is full the slot is not read and counts in `overflowed`.
 *
 * The descriptors are the caller's: it keeps them open (a replaced file is reopened onto
 * the same number with dup2) until stop() returned.
 */
#define PY_SSIZE_T_CLEAN
#define _GNU_SOURCE
#include <Python.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_S 1000000000LL
/* Longest single sleep: how long stop() may wait for the thread to notice. */
#define MAX_SLEEP_NS 100000000LL

typedef struct {
    PyObject_HEAD
    int nfiles;
    int *fds;
    Py_ssize_t size;      /* bytes read per file */
    int64_t interval_ns;
    uint64_t capacity;    /* readings the ring holds */
    size_t slot_bytes;    /* int64 stamp, then per file: int32 length or -errno, bytes */
    unsigned char *ring;
    _Atomic uint64_t head; /* readings produced (written by the thread only) */
    _Atomic uint64_t tail; /* readings consumed (written by drain only) */
    _Atomic int stopping;
    _Atomic uint64_t missed;
    _Atomic uint64_t overflowed;
    _Atomic int64_t final_cpu_ns;
    _Atomic int finished;
    pthread_t thread;
    int started;
    int joined;
    clockid_t cpu_clock;
    int have_cpu_clock;
} Reader;

static int64_t now_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static void sleep_until(Reader *r, int64_t due_ns) {
    for (;;) {
        if (atomic_load_explicit(&r->stopping, memory_order_relaxed)) return;
        int64_t now = now_ns(CLOCK_MONOTONIC);
        if (now >= due_ns) return;
        int64_t target = due_ns - now > MAX_SLEEP_NS ? now + MAX_SLEEP_NS : due_ns;
        struct timespec ts = {.tv_sec = target / NS_PER_S, .tv_nsec = target % NS_PER_S};
        int rc;
        do {
            rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        } while (rc == EINTR);
        if (target == due_ns) return;
    }
}

static void read_one(Reader *r, unsigned char *slot) {
    unsigned char *p = slot + sizeof(int64_t);
    for (int i = 0; i < r->nfiles; i++) {
        int32_t len;
        ssize_t n = pread(r->fds[i], p + sizeof(int32_t), (size_t)r->size, 0);
        len = n >= 0 ? (int32_t)n : -(int32_t)errno;
        memcpy(p, &len, sizeof len);
        p += sizeof(int32_t) + (size_t)r->size;
    }
    int64_t t = now_ns(CLOCK_MONOTONIC);
    memcpy(slot, &t, sizeof t);
}

static void *run(void *arg) {
    Reader *r = (Reader *)arg;
    int64_t start = now_ns(CLOCK_MONOTONIC), interval = r->interval_ns, k = 0;
    while (!atomic_load_explicit(&r->stopping, memory_order_relaxed)) {
        uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
        uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
        if (head - tail < r->capacity) {
            read_one(r, r->ring + (head % r->capacity) * r->slot_bytes);
            atomic_store_explicit(&r->head, head + 1, memory_order_release);
        } else {
            atomic_fetch_add_explicit(&r->overflowed, 1, memory_order_relaxed);
        }
        k++;
        int64_t now = now_ns(CLOCK_MONOTONIC), due = start + k * interval;
        if (due <= now) {
            int64_t behind = (now - start) / interval + 1;
            atomic_fetch_add_explicit(&r->missed, (uint64_t)(behind - k), memory_order_relaxed);
            k = behind;
            due = start + k * interval;
        }
        sleep_until(r, due);
    }
    atomic_store(&r->final_cpu_ns, now_ns(CLOCK_THREAD_CPUTIME_ID));
    atomic_store(&r->finished, 1);
    return NULL;
}

static void join_thread(Reader *r) {
    atomic_store(&r->stopping, 1);
    if (r->started && !r->joined) {
        Py_BEGIN_ALLOW_THREADS
        pthread_join(r->thread, NULL);
        Py_END_ALLOW_THREADS
        r->joined = 1;
    }
}

static int Reader_init(Reader *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"fds", "size", "interval_s", "capacity", NULL};
    PyObject *fds_obj;
    Py_ssize_t size, capacity;
    double interval_s;
    if (self->started) {
        PyErr_SetString(PyExc_RuntimeError, "Reader is already initialised");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "Ondn", kwlist, &fds_obj, &size, &interval_s,
                                     &capacity))
        return -1;
    PyObject *seq = PySequence_Fast(fds_obj, "fds must be a sequence of file descriptors");
    if (seq == NULL) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n < 1 || n > 4096 || size < 1 || size > 4096 || capacity < 1 || capacity > (1 << 20) ||
        !(interval_s > 0.0 && interval_s < 3600.0)) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError,
                     "Reader needs 1..4096 fds, size 1..4096, capacity 1..1048576 and "
                     "0 < interval_s < 3600; got %zd fds, size %zd, capacity %zd",
                     n, size, capacity);
        return -1;
    }
    int *fds = PyMem_Calloc((size_t)n, sizeof(int));
    if (fds == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long fd = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (fd == -1 && PyErr_Occurred()) {
            PyMem_Free(fds);
            Py_DECREF(seq);
            return -1;
        }
        if (fd < 0 || fd > INT32_MAX) {
            PyMem_Free(fds);
            Py_DECREF(seq);
            PyErr_Format(PyExc_ValueError, "fd %ld is not a file descriptor", fd);
            return -1;
        }
        fds[i] = (int)fd;
    }
    Py_DECREF(seq);
    size_t slot_bytes = sizeof(int64_t) + (size_t)n * (sizeof(int32_t) + (size_t)size);
    slot_bytes = (slot_bytes + 7) & ~(size_t)7;
    unsigned char *ring = PyMem_Calloc((size_t)capacity, slot_bytes);
    if (ring == NULL) {
        PyMem_Free(fds);
        PyErr_NoMemory();
        return -1;
    }
    PyMem_Free(self->fds);
    PyMem_Free(self->ring);
    self->fds = fds;
    self->ring = ring;
    self->nfiles = (int)n;
    self->size = size;
    self->interval_ns = (int64_t)(interval_s * 1e9);
    if (self->interval_ns < 1) self->interval_ns = 1;
    self->capacity = (uint64_t)capacity;
    self->slot_bytes = slot_bytes;
    return 0;
}

static void Reader_dealloc(Reader *self) {
    join_thread(self);
    PyMem_Free(self->fds);
    PyMem_Free(self->ring);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Reader_start(Reader *self, PyObject *Py_UNUSED(ignored)) {
    if (self->ring == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Reader was not initialised");
        return NULL;
    }
    if (self->started) {
        PyErr_SetString(PyExc_RuntimeError, "Reader was already started; create a new one");
        return NULL;
    }
    int rc = pthread_create(&self->thread, NULL, run, self);
    if (rc != 0) {
        errno = rc;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    self->started = 1;
    self->have_cpu_clock = pthread_getcpuclockid(self->thread, &self->cpu_clock) == 0;
    Py_RETURN_NONE;
}

static PyObject *Reader_stop(Reader *self, PyObject *Py_UNUSED(ignored)) {
    join_thread(self);
    Py_RETURN_NONE;
}

/* Every reading produced since the last drain, oldest first, as
 * (t_s, texts, failed): texts has one bytes per file, or the errno (int) of a failed
 * pread; failed counts those. */
static PyObject *Reader_drain(Reader *self, PyObject *Py_UNUSED(ignored)) {
    PyObject *out = PyList_New(0);
    if (out == NULL || self->ring == NULL) return out;
    uint64_t tail = atomic_load_explicit(&self->tail, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&self->head, memory_order_acquire);
    for (; tail != head; tail++) {
        const unsigned char *slot = self->ring + (tail % self->capacity) * self->slot_bytes;
        int64_t t;
        memcpy(&t, slot, sizeof t);
        const unsigned char *p = slot + sizeof(int64_t);
        PyObject *texts = PyTuple_New(self->nfiles);
        if (texts == NULL) goto fail;
        int failed = 0;
        for (int i = 0; i < self->nfiles; i++) {
            int32_t len;
            memcpy(&len, p, sizeof len);
            PyObject *item = len >= 0 ? PyBytes_FromStringAndSize((const char *)p + sizeof len, len)
                                      : PyLong_FromLong(-(long)len);
            if (item == NULL) {
                Py_DECREF(texts);
                goto fail;
            }
            failed += len < 0;
            PyTuple_SET_ITEM(texts, i, item);
            p += sizeof(int32_t) + (size_t)self->size;
        }
        PyObject *entry = Py_BuildValue("(dNi)", (double)t / 1e9, texts, failed);
        if (entry == NULL || PyList_Append(out, entry) < 0) {
            Py_XDECREF(entry);
            goto fail;
        }
        Py_DECREF(entry);
    }
    atomic_store_explicit(&self->tail, tail, memory_order_release);
    return out;
fail:
    /* Readings already copied into `out` are consumed with it; keep the rest. */
    atomic_store_explicit(&self->tail, tail, memory_order_release);
    Py_DECREF(out);
    return NULL;
}

static PyObject *Reader_cpu_s(Reader *self, PyObject *Py_UNUSED(ignored)) {
    if (self->started && !atomic_load(&self->finished) && self->have_cpu_clock) {
        struct timespec ts;
        if (clock_gettime(self->cpu_clock, &ts) == 0)
            return PyFloat_FromDouble((double)ts.tv_sec + ts.tv_nsec * 1e-9);
    }
    return PyFloat_FromDouble((double)atomic_load(&self->final_cpu_ns) * 1e-9);
}

static PyObject *Reader_get_missed(Reader *self, void *Py_UNUSED(closure)) {
    return PyLong_FromUnsignedLongLong(atomic_load(&self->missed));
}

static PyObject *Reader_get_overflowed(Reader *self, void *Py_UNUSED(closure)) {
    return PyLong_FromUnsignedLongLong(atomic_load(&self->overflowed));
}

static PyObject *Reader_get_running(Reader *self, void *Py_UNUSED(closure)) {
    return PyBool_FromLong(self->started && !self->joined && !atomic_load(&self->finished));
}

static PyMethodDef Reader_methods[] = {
    {"start", (PyCFunction)Reader_start, METH_NOARGS, "Start the reader thread (once)."},
    {"stop", (PyCFunction)Reader_stop, METH_NOARGS,
     "Stop the thread and join it (at most about 0.1 s). Idempotent."},
    {"drain", (PyCFunction)Reader_drain, METH_NOARGS,
     "Readings since the last drain: list of (t_s, texts, failed)."},
    {"cpu_s", (PyCFunction)Reader_cpu_s, METH_NOARGS, "CPU time of the reader thread, s."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Reader_getset[] = {
    {"missed", (getter)Reader_get_missed, NULL, "Slots skipped because a read overran.", NULL},
    {"overflowed", (getter)Reader_get_overflowed, NULL,
     "Slots not read because the ring was full (not drained in time).", NULL},
    {"running", (getter)Reader_get_running, NULL, "True while the thread runs.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pytest_edgeenergy.meters._preadring.Reader",
    .tp_doc = "Reader(fds, size, interval_s, capacity): a native thread that preads fds "
              "every interval_s into a ring of capacity readings.",
    .tp_basicsize = sizeof(Reader),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Reader_init,
    .tp_dealloc = (destructor)Reader_dealloc,
    .tp_methods = Reader_methods,
    .tp_getset = Reader_getset,
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT,
    .m_name = "pytest_edgeenergy.meters._preadring",
    .m_doc = "Native reader thread of the INA sampler (see sampler.py).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__preadring(void) {
    if (PyType_Ready(&ReaderType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL) return NULL;
    Py_INCREF(&ReaderType);
    if (PyModule_AddObject(m, "Reader", (PyObject *)&ReaderType) < 0) {
        Py_DECREF(&ReaderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
