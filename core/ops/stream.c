/* stream.c -- streams and events (moontorch.h), over the hooks of a device's backend
 * (core/backend.h). A handle (mt_stream, mt_event) names the device and the backend's own handle; a
 * backend without the hooks is a device that queues nothing: its only stream is the default one, its
 * events are done as soon as they are recorded. */
#include "dispatch.h"

#include <stdlib.h>

/* the backend of a handle's device, which must still be there (a spec may take the fake device out) */
static mt_status backend_of(int type, int index, const char *op, const mt_backend **b) {
  mt_device d = {type, index};
  MT_TRY(mt_device_arg(&d, op, &d));
  *b = mt_backends[type];
  return MT_OK;
}

/* ---------------------------------------------------------------- streams */
static mt_status stream_handle(const mt_device *device, void *h, int owned, int priority, const char *op,
                               mt_stream **out) {
  if (!out) return mt_error(MT_EINVAL, "%s: out is NULL", op);
  mt_device d = MT_DEVICE_CPU;
  MT_TRY(mt_device_arg(device, op, &d));
  mt_stream *s = malloc(sizeof *s);
  if (!s) return mt_error(MT_ENOMEM, "%s: out of memory", op);
  s->_device_type = d.type;
  s->_device_index = d.index;
  s->_handle = h;
  s->_owned = owned;
  s->_priority = priority;
  *out = s;
  return MT_OK;
}

mt_status mt_stream_new(const mt_device *device, int priority, mt_stream **out) {
  mt_device d = MT_DEVICE_CPU;
  MT_TRY(mt_device_arg(device, "Stream", &d));
  const mt_backend *b = mt_backends[d.type];
  void *h = NULL;
  if (b->stream_new) MT_TRY(b->stream_new(d.index, priority, &h));
  mt_status s = stream_handle(&d, h, 1, priority, "Stream", out);
  if (s && h && b->stream_free) b->stream_free(d.index, h);
  return s;
}

mt_status mt_stream_current(const mt_device *device, mt_stream **out) {
  mt_device d = MT_DEVICE_CPU;
  MT_TRY(mt_device_arg(device, "current_stream", &d));
  const mt_backend *b = mt_backends[d.type];
  return stream_handle(&d, b->current_stream ? b->current_stream(d.index) : NULL, 0, 0, "current_stream", out);
}

mt_status mt_stream_default(const mt_device *device, mt_stream **out) {
  return stream_handle(device, NULL, 0, 0, "default_stream", out);
}

void mt_stream_free(mt_stream *s) {
  if (!s) return;
  const mt_backend *b;
  if (s->_owned && s->_handle && backend_of(s->_device_type, s->_device_index, "Stream", &b) == MT_OK &&
      b->stream_free)
    b->stream_free(s->_device_index, s->_handle);
  free(s);
}

mt_status mt_stream_set_current(const mt_stream *s) {
  if (!s) return mt_error(MT_EINVAL, "set_stream: stream is NULL");
  const mt_backend *b;
  MT_TRY(backend_of(s->_device_type, s->_device_index, "set_stream", &b));
  if (b->set_stream) return b->set_stream(s->_device_index, s->_handle);
  return MT_OK;
}

mt_status mt_stream_synchronize(const mt_stream *s) {
  if (!s) return mt_error(MT_EINVAL, "synchronize: stream is NULL");
  const mt_backend *b;
  MT_TRY(backend_of(s->_device_type, s->_device_index, "synchronize", &b));
  return b->synchronize ? b->synchronize(s->_device_index, s->_handle) : MT_OK;
}

int mt_stream_query(const mt_stream *s) {
  const mt_backend *b;
  if (!s || backend_of(s->_device_type, s->_device_index, "query", &b) != MT_OK) return 1;
  return b->stream_query ? b->stream_query(s->_device_index, s->_handle) : 1;
}

mt_status mt_tensor_record_stream(const mt_tensor *t, const mt_stream *s) {
  MT_TRY(mt_check_tensor(t, "record_stream", "input"));
  if (!s) return mt_error(MT_EINVAL, "record_stream: stream is NULL");
  if (t->_device_type != s->_device_type || t->_device_index != s->_device_index)
    return mt_error(MT_EDEVICE, "record_stream: the tensor is on device %s, the stream on %s",
                    mt_device_str(mt_device_of(t)), mt_device_str((mt_device){s->_device_type, s->_device_index}));
  const mt_backend *b;
  MT_TRY(backend_of(s->_device_type, s->_device_index, "record_stream", &b));
  if (b->record_stream && t->_storage->_block) b->record_stream(s->_device_index, t->_storage->_block, s->_handle);
  return MT_OK;
}

/* ---------------------------------------------------------------- events */
mt_status mt_event_new(const mt_device *device, int flags, mt_event **out) {
  if (!out) return mt_error(MT_EINVAL, "Event: out is NULL");
  mt_device d = MT_DEVICE_CPU;
  MT_TRY(mt_device_arg(device, "Event", &d));
  const mt_backend *b = mt_backends[d.type];
  void *h = NULL;
  if (b->event_new) MT_TRY(b->event_new(d.index, flags, &h));
  mt_event *e = malloc(sizeof *e);
  if (!e) {
    if (h && b->event_free) b->event_free(d.index, h);
    return mt_error(MT_ENOMEM, "Event: out of memory");
  }
  e->_device_type = d.type;
  e->_device_index = d.index;
  e->_handle = h;
  e->_flags = flags;
  e->_recorded = 0;
  *out = e;
  return MT_OK;
}

void mt_event_free(mt_event *e) {
  if (!e) return;
  const mt_backend *b;
  if (e->_handle && backend_of(e->_device_type, e->_device_index, "Event", &b) == MT_OK && b->event_free)
    b->event_free(e->_device_index, e->_handle);
  free(e);
}

/* the stream handle an event call means: s's (on the event's device), or the current one */
static mt_status event_stream(const mt_event *e, const mt_stream *s, const char *op, const mt_backend *b, void **h) {
  if (!s) {
    *h = b->current_stream ? b->current_stream(e->_device_index) : NULL;
    return MT_OK;
  }
  if (s->_device_type != e->_device_type || s->_device_index != e->_device_index)
    return mt_error(MT_EDEVICE, "%s: the event is on device %s, the stream on %s", op,
                    mt_device_str((mt_device){e->_device_type, e->_device_index}),
                    mt_device_str((mt_device){s->_device_type, s->_device_index}));
  *h = s->_handle;
  return MT_OK;
}

mt_status mt_event_record(mt_event *e, const mt_stream *s) {
  if (!e) return mt_error(MT_EINVAL, "record: event is NULL");
  const mt_backend *b;
  void *h = NULL;
  MT_TRY(backend_of(e->_device_type, e->_device_index, "record", &b));
  MT_TRY(event_stream(e, s, "record", b, &h));
  if (b->event_record) MT_TRY(b->event_record(e->_device_index, e->_handle, h));
  e->_recorded = 1;
  return MT_OK;
}

mt_status mt_event_wait(mt_event *e, const mt_stream *s) {
  if (!e) return mt_error(MT_EINVAL, "wait: event is NULL");
  const mt_backend *b;
  void *h = NULL;
  MT_TRY(backend_of(e->_device_type, e->_device_index, "wait", &b));
  MT_TRY(event_stream(e, s, "wait", b, &h));
  return b->event_wait && e->_recorded ? b->event_wait(e->_device_index, e->_handle, h) : MT_OK;
}

mt_status mt_event_synchronize(mt_event *e) {
  if (!e) return mt_error(MT_EINVAL, "synchronize: event is NULL");
  const mt_backend *b;
  MT_TRY(backend_of(e->_device_type, e->_device_index, "synchronize", &b));
  return b->event_synchronize && e->_recorded ? b->event_synchronize(e->_device_index, e->_handle) : MT_OK;
}

int mt_event_query(mt_event *e) {
  const mt_backend *b;
  if (!e || !e->_recorded || backend_of(e->_device_type, e->_device_index, "query", &b) != MT_OK) return 1;
  return b->event_query ? b->event_query(e->_device_index, e->_handle) : 1;
}

mt_status mt_event_elapsed_ms(const mt_event *start, const mt_event *end, double *ms) {
  if (!start || !end || !ms) return mt_error(MT_EINVAL, "elapsed_time: an argument is NULL");
  if (!(start->_flags & MT_EVENT_TIMING) || !(end->_flags & MT_EVENT_TIMING))
    return mt_error(MT_ESTATE, "elapsed_time: both events must be created with enable_timing=true");
  if (!start->_recorded || !end->_recorded)
    return mt_error(MT_ESTATE, "elapsed_time: both events must be recorded first");
  if (start->_device_type != end->_device_type || start->_device_index != end->_device_index)
    return mt_error(MT_EDEVICE, "elapsed_time: the events are on two devices");
  const mt_backend *b;
  MT_TRY(backend_of(start->_device_type, start->_device_index, "elapsed_time", &b));
  if (!b->event_elapsed) {
    *ms = 0;
    return MT_OK;
  }
  MT_TRY(b->event_elapsed(start->_device_index, start->_handle, end->_handle, ms));
  *ms = mt_number_out(*ms);
  return MT_OK;
}
