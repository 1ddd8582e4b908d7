#define GST_USE_UNSTABLE_API 1
#include <pthread.h>
#include "duet_gst.h"

#include <gst/gst.h>
#include <gst/sdp/sdp.h>
#include <gst/webrtc/webrtc.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

// The `level` element measures every 100 ms; a report averages what it measured over the last second (Chromium's
// fake microphone beeps 20 ms every 500 ms: a shorter window could fall between two beeps and read silence).
#define LEVEL_INTERVAL_NS (100 * GST_MSECOND)
#define LEVEL_WINDOW_US (1000 * G_TIME_SPAN_MILLISECOND)
#define LEVEL_SLOTS 16
// dBFS reported for silence, or when nothing was decoded in the window (JSON has no -inf).
#define LEVEL_FLOOR_DB (-100.0)

typedef struct {
    gint64 at;     // g_get_monotonic_time() when the measurement arrived
    double power;  // mean square of the interval, linear, averaged over channels
    double peak;   // peak power in dB
} LevelSlot;

struct DuetPeer {
    DuetPeerCallbacks cb;
    GstElement *pipeline;
    GstElement *webrtc;
    gint refs;    // the owner + every promise in flight (a late promise must not touch freed memory)
    gint closed;  // set before teardown: callbacks stop reaching Swift
    gint video_frames;
    gint audio_packets;
    gint video_width;   // of the decoded video, set when its pad appears
    gint video_height;
    // The inbound streams as their pads' caps name them (webrtcbin 1.22's stats label every inbound-rtp "audio"
    // and leave its codec empty): SSRC and encoding name per kind, guarded by `audio_lock`.
    guint audio_ssrc, video_ssrc;
    char audio_codec[16], video_codec[16];
    // Decoded audio, written on GStreamer's streaming threads and read by stats: guarded by `audio_lock`. A pthread
    // mutex, not a GMutex: glib's is a bare futex that ThreadSanitizer cannot see (it reported this pair as a race).
    pthread_mutex_t audio_lock;
    gint64 audio_samples;
    LevelSlot levels[LEVEL_SLOTS];
    guint next_level;
    gchar **offer_mids;  // set before the first offer, read on webrtcbin's thread afterwards
};

typedef struct {
    DuetPeer *peer;
    uint64_t request;
} Pending;

// Peers not yet freed (their last reference not yet given back): what `duet_gst_deinit` checks before it frees
// GStreamer under them.
static gint live_peers = 0;

static void peer_unref(DuetPeer *peer) {
    if (!g_atomic_int_dec_and_test(&peer->refs)) return;
    g_atomic_int_add(&live_peers, -1);
    // The last holder (owner, promise or stats reader) releases the elements.
    gst_object_unref(peer->webrtc);
    gst_object_unref(peer->pipeline);
    g_strfreev(peer->offer_mids);
    pthread_mutex_destroy(&peer->audio_lock);
    g_free(peer);
}

void duet_peer_retain(DuetPeer *peer) { g_atomic_int_inc(&peer->refs); }
void duet_peer_release(DuetPeer *peer) { peer_unref(peer); }

int64_t duet_peer_inbound(DuetPeer *peer) {
    return (int64_t)g_atomic_int_get(&peer->video_frames) + (int64_t)g_atomic_int_get(&peer->audio_packets);
}

static Pending *pending_new(DuetPeer *peer, uint64_t request) {
    g_atomic_int_inc(&peer->refs);
    Pending *pending = g_new0(Pending, 1);
    pending->peer = peer;
    pending->request = request;
    return pending;
}

static void pending_free(gpointer data) {
    Pending *pending = data;
    peer_unref(pending->peer);
    g_free(pending);
}

static int is_open(DuetPeer *peer) { return !g_atomic_int_get(&peer->closed); }

static void reply(DuetPeer *peer, uint64_t request, const char *sdp, const char *error) {
    if (is_open(peer)) peer->cb.on_reply(peer->cb.ctx, request, sdp, error);
}

int duet_gst_deinit(void) {
    // A peer still held (a stats call or a promise of webrtcbin's not yet given back) would run on a GStreamer freed
    // under it: refused, and said, so the leak check fails instead of crashing or passing. Given 2 s first: a
    // streaming thread may still be letting its last reference go as the process ends.
    gint64 deadline = g_get_monotonic_time() + 2 * G_TIME_SPAN_SECOND;
    while (g_atomic_int_get(&live_peers) > 0 && g_get_monotonic_time() < deadline) g_usleep(10 * 1000);
    int alive = g_atomic_int_get(&live_peers);
    if (alive > 0) return alive;
    gst_deinit();
    return 0;
}

int duet_gst_init(char *error, size_t error_len) {
    GError *err = NULL;
    if (!gst_init_check(NULL, NULL, &err)) {
        snprintf(error, error_len, "GStreamer did not initialise: %s", err ? err->message : "unknown error");
        g_clear_error(&err);
        return 0;
    }
    const char *needed[] = {"webrtcbin", "nicesrc", "videotestsrc", "audiotestsrc", "vp8enc", "vp8dec", "rtpvp8pay",
                            "opusenc", "opusdec", "rtpopuspay", "decodebin", "videoconvert", "audioconvert", "level", "fakesink"};
    for (size_t i = 0; i < G_N_ELEMENTS(needed); i++) {
        GstElementFactory *factory = gst_element_factory_find(needed[i]);
        if (!factory) {
            snprintf(error, error_len,
                     "GStreamer element '%s' is missing (install gstreamer1.0-plugins-bad, -good, -base and gstreamer1.0-nice)",
                     needed[i]);
            return 0;
        }
        gst_object_unref(factory);
    }
    return 1;
}

// MARK: - events from webrtcbin

static void on_ice_candidate(GstElement *webrtc, guint mline, gchar *candidate, gpointer data) {
    DuetPeer *peer = data;
    if (!is_open(peer)) return;
    // webrtcbin gives only the m-line index; the mid comes from our local description.
    GstWebRTCSessionDescription *local = NULL;
    g_object_get(webrtc, "local-description", &local, NULL);
    const gchar *mid = NULL;
    if (local && mline < gst_sdp_message_medias_len(local->sdp))
        mid = gst_sdp_media_get_attribute_val(gst_sdp_message_get_media(local->sdp, mline), "mid");
    peer->cb.on_candidate(peer->cb.ctx, mline, mid, candidate);
    if (local) gst_webrtc_session_description_free(local);
}

static void on_notify_state(GObject *object, GParamSpec *spec, gpointer data) {
    DuetPeer *peer = data;
    if (!is_open(peer)) return;
    int value = 0;
    g_object_get(object, spec->name, &value, NULL);
    int kind = -1;
    if (!strcmp(spec->name, "ice-connection-state")) kind = DUET_STATE_ICE_CONNECTION;
    else if (!strcmp(spec->name, "connection-state")) kind = DUET_STATE_CONNECTION;
    else if (!strcmp(spec->name, "signaling-state")) kind = DUET_STATE_SIGNALING;
    else if (!strcmp(spec->name, "ice-gathering-state")) kind = DUET_STATE_GATHERING;
    if (kind >= 0) peer->cb.on_state(peer->cb.ctx, kind, value);
}

static GstPadProbeReturn count_buffer(GstPad *pad, GstPadProbeInfo *info, gpointer counter) {
    (void)pad;
    (void)info;
    g_atomic_int_inc((gint *)counter);
    return GST_PAD_PROBE_OK;
}

// Decoded audio reaches `level` as 16-bit mono: a buffer of N bytes carries N / 2 samples.
static GstPadProbeReturn count_samples(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad;
    DuetPeer *peer = data;
    GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER(info);
    if (!buffer) return GST_PAD_PROBE_OK;
    pthread_mutex_lock(&peer->audio_lock);
    peer->audio_samples += (gint64)(gst_buffer_get_size(buffer) / 2);
    pthread_mutex_unlock(&peer->audio_lock);
    return GST_PAD_PROBE_OK;
}

// The first value of a `level` field (a GValueArray of doubles, one per channel) averaged as power, or the
// largest one, in dB. The array is read through its struct: GValueArray's functions are deprecated.
static double level_field(const GstStructure *s, const char *field, gboolean largest, gboolean *ok) {
    const GValue *value = gst_structure_get_value(s, field);
    *ok = FALSE;
    if (!value || G_VALUE_TYPE(value) != g_type_from_name("GValueArray")) return 0;
    const GValueArray *array = g_value_get_boxed(value);
    if (!array || array->n_values == 0) return 0;
    double result = largest ? -INFINITY : 0;
    for (guint i = 0; i < array->n_values; i++) {
        if (!G_VALUE_HOLDS_DOUBLE(&array->values[i])) return 0;
        double db = g_value_get_double(&array->values[i]);
        if (largest) result = fmax(result, db);
        else result += isfinite(db) ? pow(10.0, db / 10.0) / array->n_values : 0;
    }
    *ok = TRUE;
    return result;
}

// The pipeline has no main loop: `level`'s messages are taken on the streaming thread that posts them.
static GstBusSyncReply on_bus_message(GstBus *bus, GstMessage *message, gpointer data) {
    (void)bus;
    DuetPeer *peer = data;
    if (GST_MESSAGE_TYPE(message) != GST_MESSAGE_ELEMENT) return GST_BUS_PASS;
    const GstStructure *s = gst_message_get_structure(message);
    if (!s || !gst_structure_has_name(s, "level")) return GST_BUS_PASS;
    gboolean has_rms = FALSE, has_peak = FALSE;
    double power = level_field(s, "rms", FALSE, &has_rms);
    double peak = level_field(s, "peak", TRUE, &has_peak);
    if (has_rms) {
        pthread_mutex_lock(&peer->audio_lock);
        peer->levels[peer->next_level] = (LevelSlot){g_get_monotonic_time(), power, has_peak ? peak : -INFINITY};
        peer->next_level = (peer->next_level + 1) % LEVEL_SLOTS;
        pthread_mutex_unlock(&peer->audio_lock);
    }
    gst_message_unref(message);
    return GST_BUS_DROP;
}

static void on_decoded_pad(GstElement *decodebin, GstPad *pad, gpointer data) {
    DuetPeer *peer = data;
    GstCaps *caps = gst_pad_get_current_caps(pad);
    if (!caps) return;
    const GstStructure *format = gst_caps_get_structure(caps, 0);
    gboolean video = g_str_has_prefix(gst_structure_get_name(format), "video/");
    gint width = 0, height = 0;
    if (video && gst_structure_get_int(format, "width", &width) && gst_structure_get_int(format, "height", &height)) {
        g_atomic_int_set(&peer->video_width, width);
        g_atomic_int_set(&peer->video_height, height);
    }
    gst_caps_unref(caps);
    // Decoded media ends in a fakesink: a headless peer counts video frames, and counts and measures the
    // decoded audio (decodebin has put the Opus decoder before this branch).
    gchar *audio = g_strdup_printf("queue ! audioconvert ! audio/x-raw,format=S16LE,channels=1 ! "
                                   "level name=level interval=%" G_GUINT64_FORMAT " post-messages=true ! "
                                   "fakesink sync=false async=false",
                                   (guint64)LEVEL_INTERVAL_NS);
    GstElement *bin = gst_parse_bin_from_description(video ? "queue ! videoconvert ! fakesink sync=false async=false" : audio, TRUE, NULL);
    g_free(audio);
    if (!bin) return;
    GstElement *pipeline = GST_ELEMENT(gst_element_get_parent(decodebin));
    gst_bin_add(GST_BIN(pipeline), bin);
    gst_element_sync_state_with_parent(bin);
    GstPad *sink = gst_element_get_static_pad(bin, "sink");
    gst_pad_link(pad, sink);
    gst_object_unref(sink);
    gst_object_unref(pipeline);
    if (video) {
        gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, count_buffer, &peer->video_frames, NULL);
    } else {
        GstElement *level = gst_bin_get_by_name(GST_BIN(bin), "level");
        GstPad *measured = level ? gst_element_get_static_pad(level, "sink") : NULL;
        if (measured) gst_pad_add_probe(measured, GST_PAD_PROBE_TYPE_BUFFER, count_samples, peer, NULL);
        if (measured) gst_object_unref(measured);
        if (level) gst_object_unref(level);
    }
}

static void on_incoming_pad(GstElement *webrtc, GstPad *pad, gpointer data) {
    DuetPeer *peer = data;
    if (GST_PAD_DIRECTION(pad) != GST_PAD_SRC) return;
    GstCaps *caps = gst_pad_get_current_caps(pad);
    gboolean audio = FALSE;
    if (caps) {
        const GstStructure *format = gst_caps_get_structure(caps, 0);
        const gchar *media = gst_structure_get_string(format, "media");
        audio = media && !strcmp(media, "audio");
        gboolean video = media && !strcmp(media, "video");
        guint ssrc = 0;
        const gchar *encoding = gst_structure_get_string(format, "encoding-name");
        if ((audio || video) && gst_structure_get_uint(format, "ssrc", &ssrc)) {
            pthread_mutex_lock(&peer->audio_lock);
            *(audio ? &peer->audio_ssrc : &peer->video_ssrc) = ssrc;
            g_strlcpy(audio ? peer->audio_codec : peer->video_codec, encoding ? encoding : "", sizeof peer->audio_codec);
            pthread_mutex_unlock(&peer->audio_lock);
        }
        gst_caps_unref(caps);
    }
    if (audio) gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, count_buffer, &peer->audio_packets, NULL);
    GstElement *decodebin = gst_element_factory_make("decodebin", NULL);
    g_signal_connect(decodebin, "pad-added", G_CALLBACK(on_decoded_pad), peer);
    GstElement *pipeline = GST_ELEMENT(gst_element_get_parent(webrtc));
    gst_bin_add(GST_BIN(pipeline), decodebin);
    gst_element_sync_state_with_parent(decodebin);
    GstPad *sink = gst_element_get_static_pad(decodebin, "sink");
    gst_pad_link(pad, sink);
    gst_object_unref(sink);
    gst_object_unref(pipeline);
}

// MARK: - creating the peer

// The stream browsers put our tracks in: one for both, or a page that shows one remote stream gets only one of them.
static const char *STREAM_ID = "duet-call";

static gboolean set_stream_id(GstElement *element, GstPad *pad, gpointer data) {
    (void)element;
    (void)data;
    // 1.22's sink pads have `msid` (the stream in `a=ssrc:… msid:`); an older webrtcbin keeps its own.
    if (g_object_class_find_property(G_OBJECT_GET_CLASS(pad), "msid")) g_object_set(pad, "msid", STREAM_ID, NULL);
    return TRUE;
}

// The payload types are the call's (`duet_peer_new`): webrtcbin 1.22 matches an offer's m-lines to a transceiver by
// its caps, payload type included, and never rewrites what the payloader sends.
static const char *SEND_VIDEO =
    "videotestsrc is-live=true pattern=ball ! video/x-raw,width=320,height=240,framerate=30/1 ! videoconvert ! queue ! "
    "vp8enc deadline=1 keyframe-max-dist=30 ! rtpvp8pay pt=%d ! application/x-rtp,media=video,encoding-name=VP8,payload=%d ! w. ";
// The tone is a 440 Hz sine at 0.3 of full scale (RMS about -13.5 dBFS), well above silence: the other side's
// checks of decoded audio energy (Chromium's totalAudioEnergy, another duet call's `level`) must see it.
static const char *SEND_AUDIO =
    "audiotestsrc is-live=true wave=sine freq=440 volume=0.3 ! audioconvert ! audioresample ! queue ! opusenc ! rtpopuspay pt=%d ! "
    "application/x-rtp,media=audio,encoding-name=OPUS,payload=%d ! w. ";

DuetPeer *duet_peer_new(DuetPeerCallbacks callbacks, int audio_only, int audio_first, int opus_pt, int vp8_pt,
                        const char *const *ice_addresses, int n_ice_addresses, int relay_only, char *error, size_t error_len) {
    if (opus_pt < 96 || opus_pt > 127 || vp8_pt < 96 || vp8_pt > 127 || opus_pt == vp8_pt) {
        snprintf(error, error_len, "payload types must be distinct dynamic ones (96-127): opus %d, vp8 %d", opus_pt, vp8_pt);
        return NULL;
    }
    // Sink pads (and so m-lines) are requested in the order the branches are written.
    gchar *audio = g_strdup_printf(SEND_AUDIO, opus_pt, opus_pt);
    gchar *video = audio_only ? g_strdup("") : g_strdup_printf(SEND_VIDEO, vp8_pt, vp8_pt);
    gchar *description = g_strconcat("webrtcbin name=w bundle-policy=max-bundle ", audio_first ? audio : video,
                                     audio_first ? video : audio, NULL);
    g_free(audio);
    g_free(video);
    GError *err = NULL;
    GstElement *pipeline = gst_parse_launch(description, &err);
    g_free(description);
    if (!pipeline || err) {
        snprintf(error, error_len, "the media pipeline could not be built: %s", err ? err->message : "unknown error");
        g_clear_error(&err);
        if (pipeline) gst_object_unref(pipeline);
        return NULL;
    }
    DuetPeer *peer = g_new0(DuetPeer, 1);
    peer->cb = callbacks;
    peer->refs = 1;
    g_atomic_int_inc(&live_peers);
    pthread_mutex_init(&peer->audio_lock, NULL);
    peer->pipeline = pipeline;
    peer->webrtc = gst_bin_get_by_name(GST_BIN(pipeline), "w");

    if (audio_only) {
        // Nothing to send, but the other side's video is still received.
        gchar *text = g_strdup_printf("application/x-rtp,media=video,encoding-name=VP8,payload=%d,clock-rate=90000", vp8_pt);
        GstCaps *caps = gst_caps_from_string(text);
        g_free(text);
        GstWebRTCRTPTransceiver *transceiver = NULL;
        g_signal_emit_by_name(peer->webrtc, "add-transceiver", GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_RECVONLY, caps, &transceiver);
        gst_caps_unref(caps);
        if (transceiver) gst_object_unref(transceiver);
    }
    gst_element_foreach_sink_pad(peer->webrtc, set_stream_id, NULL);
    if (relay_only) g_object_set(peer->webrtc, "ice-transport-policy", GST_WEBRTC_ICE_TRANSPORT_POLICY_RELAY, NULL);
    if (n_ice_addresses > 0) {
        // libnice skips loopback unless told to use it; once pinned it gathers only on these addresses. Must
        // happen before the first description is applied, when gathering starts.
        GstWebRTCICE *ice = NULL;
        g_object_get(peer->webrtc, "ice-agent", &ice, NULL);
        if (ice) {
            for (int i = 0; i < n_ice_addresses; i++) {
                gboolean added = FALSE;
                g_signal_emit_by_name(ice, "add-local-ip-address", ice_addresses[i], &added);
            }
            gst_object_unref(ice);
        }
    }
    g_signal_connect(peer->webrtc, "on-ice-candidate", G_CALLBACK(on_ice_candidate), peer);
    g_signal_connect(peer->webrtc, "pad-added", G_CALLBACK(on_incoming_pad), peer);
    const char *states[] = {"notify::ice-connection-state", "notify::connection-state", "notify::signaling-state",
                            "notify::ice-gathering-state"};
    for (size_t i = 0; i < G_N_ELEMENTS(states); i++) g_signal_connect(peer->webrtc, states[i], G_CALLBACK(on_notify_state), peer);
    GstBus *bus = gst_element_get_bus(pipeline);
    gst_bus_set_sync_handler(bus, on_bus_message, peer, NULL);
    gst_object_unref(bus);

    if (gst_element_set_state(pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
        snprintf(error, error_len, "the media pipeline refused to start");
        duet_peer_free(peer);
        return NULL;
    }
    return peer;
}

void duet_peer_set_offer_mids(DuetPeer *peer, const char *mids) {
    g_strfreev(peer->offer_mids);
    peer->offer_mids = mids && *mids ? g_strsplit(mids, ",", -1) : NULL;
}

// Rewrites the offer's mids (and its BUNDLE group) to the ones the call was negotiated with.
static void remap_mids(GstSDPMessage *sdp, gchar **mids) {
    guint count = gst_sdp_message_medias_len(sdp);
    if (!mids || g_strv_length(mids) != count) return;
    GString *group = g_string_new("BUNDLE");
    for (guint i = 0; i < count; i++) {
        GstSDPMedia *media = (GstSDPMedia *)gst_sdp_message_get_media(sdp, i);
        for (guint j = 0; j < gst_sdp_media_attributes_len(media); j++) {
            const GstSDPAttribute *attribute = gst_sdp_media_get_attribute(media, j);
            if (!g_strcmp0(attribute->key, "mid")) {
                GstSDPAttribute replacement;
                gst_sdp_attribute_set(&replacement, "mid", mids[i]);
                gst_sdp_media_replace_attribute(media, j, &replacement);
                break;
            }
        }
        g_string_append_printf(group, " %s", mids[i]);
    }
    for (guint j = 0; j < gst_sdp_message_attributes_len(sdp); j++) {
        const GstSDPAttribute *attribute = gst_sdp_message_get_attribute(sdp, j);
        if (!g_strcmp0(attribute->key, "group") && g_str_has_prefix(attribute->value, "BUNDLE")) {
            GstSDPAttribute replacement;
            gst_sdp_attribute_set(&replacement, "group", group->str);
            gst_sdp_message_replace_attribute(sdp, j, &replacement);
            break;
        }
    }
    g_string_free(group, TRUE);
}

// webrtcbin names a track's stream only on `a=ssrc:… msid:`, and only once the track's caps are known: a first
// offer often has it for audio and not for video, and Chromium then hands the page two streams. Every section we
// send on names the same stream with a media-level `a=msid`, which browsers read first.
static void name_stream(GstSDPMedia *media) {
    const gchar *track = NULL;
    for (guint j = 0; j < gst_sdp_media_attributes_len(media); j++) {
        const GstSDPAttribute *attribute = gst_sdp_media_get_attribute(media, j);
        if (!g_strcmp0(attribute->key, "msid") || !g_strcmp0(attribute->key, "recvonly") || !g_strcmp0(attribute->key, "inactive"))
            return;
        if (!track && !g_strcmp0(attribute->key, "ssrc") && attribute->value) {
            const gchar *msid = strstr(attribute->value, " msid:");
            const gchar *space = msid ? strchr(msid + 6, ' ') : NULL;
            if (space) track = space + 1;  // `SSRC msid:STREAM TRACK`
        }
    }
    const gchar *mid = gst_sdp_media_get_attribute_val(media, "mid");
    gchar *value = g_strdup_printf("%s %s", STREAM_ID, track ? track : mid ? mid : gst_sdp_media_get_media(media));
    gst_sdp_media_add_attribute(media, "msid", value);
    g_free(value);
}

// webrtcbin's max-bundle offers mark every m-line but the first `port 0` + `a=bundle-only` without
// `a=rtcp-mux`; browsers read port 0 as a rejected section and require rtcp-mux. Offer them as plain bundled
// sections instead (the BUNDLE group still puts everything on one transport).
static void make_browser_compatible(GstSDPMessage *sdp) {
    for (guint i = 0; i < gst_sdp_message_medias_len(sdp); i++) {
        GstSDPMedia *media = (GstSDPMedia *)gst_sdp_message_get_media(sdp, i);
        gboolean has_mux = FALSE;
        for (guint j = 0; j < gst_sdp_media_attributes_len(media);) {
            const GstSDPAttribute *attribute = gst_sdp_media_get_attribute(media, j);
            if (!g_strcmp0(attribute->key, "bundle-only") || !g_strcmp0(attribute->key, "rtcp-mux-only")) {
                gst_sdp_media_remove_attribute(media, j);
                continue;
            }
            if (!g_strcmp0(attribute->key, "rtcp-mux")) has_mux = TRUE;
            j++;
        }
        if (gst_sdp_media_get_port(media) == 0) gst_sdp_media_set_port_info(media, 9, 1);
        if (!has_mux) gst_sdp_media_add_attribute(media, "rtcp-mux", "");
        name_stream(media);
    }
}

int duet_peer_add_turn(DuetPeer *peer, const char *url) {
    gboolean added = FALSE;
    g_signal_emit_by_name(peer->webrtc, "add-turn-server", url, &added);
    return added;
}

int duet_peer_set_stun(DuetPeer *peer, const char *url) {
    g_object_set(peer->webrtc, "stun-server", url, NULL);
    return 1;
}

// MARK: - negotiation

static void on_local_applied(GstPromise *promise, gpointer data) {
    Pending *pending = data;
    const GstStructure *result = gst_promise_get_reply(promise);
    GError *err = NULL;
    if (result) gst_structure_get(result, "error", G_TYPE_ERROR, &err, NULL);
    if (err) {
        reply(pending->peer, pending->request, NULL, err->message);
        g_clear_error(&err);
        return;
    }
    GstWebRTCSessionDescription *local = NULL;
    g_object_get(pending->peer->webrtc, "local-description", &local, NULL);
    if (!local) {
        reply(pending->peer, pending->request, NULL, "no local description after applying it");
        return;
    }
    gchar *text = gst_sdp_message_as_text(local->sdp);
    reply(pending->peer, pending->request, text, NULL);
    g_free(text);
    gst_webrtc_session_description_free(local);
}

static void on_description_created(GstPromise *promise, gpointer data) {
    Pending *pending = data;
    const GstStructure *result = gst_promise_get_reply(promise);
    GstWebRTCSessionDescription *description = NULL;
    GError *err = NULL;
    if (result) {
        gst_structure_get(result, "error", G_TYPE_ERROR, &err, NULL);
        if (!err && gst_structure_has_field(result, "offer"))
            gst_structure_get(result, "offer", GST_TYPE_WEBRTC_SESSION_DESCRIPTION, &description, NULL);
        if (!err && gst_structure_has_field(result, "answer"))
            gst_structure_get(result, "answer", GST_TYPE_WEBRTC_SESSION_DESCRIPTION, &description, NULL);
    }
    if (!description) {
        reply(pending->peer, pending->request, NULL, err ? err->message : "webrtcbin created no description");
        g_clear_error(&err);
        return;
    }
    if (description->type == GST_WEBRTC_SDP_TYPE_OFFER) remap_mids(description->sdp, pending->peer->offer_mids);
    make_browser_compatible(description->sdp);
    // Like the browser's createOffer + setLocalDescription: the caller gets the SDP once it is applied.
    GstPromise *applied = gst_promise_new_with_change_func(on_local_applied, pending_new(pending->peer, pending->request), pending_free);
    g_signal_emit_by_name(pending->peer->webrtc, "set-local-description", description, applied);
    // webrtcbin holds its own reference until it has replied; ours goes now (see create()).
    gst_promise_unref(applied);
    gst_webrtc_session_description_free(description);
}

static void create(DuetPeer *peer, const char *signal, uint64_t request) {
    // A command that raced a close (the caller holds a reference, so the memory is still ours) never touches
    // the stopped pipeline.
    if (g_atomic_int_get(&peer->closed)) { reply(peer, request, NULL, "the peer connection is closed"); return; }
    GstPromise *promise = gst_promise_new_with_change_func(on_description_created, pending_new(peer, request), pending_free);
    g_signal_emit_by_name(peer->webrtc, signal, NULL, promise);
    // webrtcbin takes its own reference for as long as the operation runs. Ours was never given back before issue 53's
    // leak check: every promise, its Pending and the peer reference that holds were kept for the process's life, so
    // no replaced session's pipeline was ever freed.
    gst_promise_unref(promise);
}

void duet_peer_create_offer(DuetPeer *peer, uint64_t request) { create(peer, "create-offer", request); }
void duet_peer_create_answer(DuetPeer *peer, uint64_t request) { create(peer, "create-answer", request); }

static void on_remote_applied(GstPromise *promise, gpointer data) {
    Pending *pending = data;
    const GstStructure *result = gst_promise_get_reply(promise);
    GError *err = NULL;
    if (result) gst_structure_get(result, "error", G_TYPE_ERROR, &err, NULL);
    reply(pending->peer, pending->request, NULL, err ? err->message : NULL);
    g_clear_error(&err);
}

void duet_peer_set_remote(DuetPeer *peer, int is_offer, const char *sdp, uint64_t request) {
    if (g_atomic_int_get(&peer->closed)) { reply(peer, request, NULL, "the peer connection is closed"); return; }
    GstSDPMessage *message = NULL;
    if (gst_sdp_message_new_from_text(sdp, &message) != GST_SDP_OK || !message) {
        reply(peer, request, NULL, "the remote SDP could not be parsed");
        return;
    }
    GstWebRTCSessionDescription *description =
        gst_webrtc_session_description_new(is_offer ? GST_WEBRTC_SDP_TYPE_OFFER : GST_WEBRTC_SDP_TYPE_ANSWER, message);
    GstPromise *promise = gst_promise_new_with_change_func(on_remote_applied, pending_new(peer, request), pending_free);
    g_signal_emit_by_name(peer->webrtc, "set-remote-description", description, promise);
    gst_promise_unref(promise);  // webrtcbin holds its own (see create())
    gst_webrtc_session_description_free(description);
}

void duet_peer_add_candidate(DuetPeer *peer, unsigned mline, const char *candidate) {
    if (g_atomic_int_get(&peer->closed)) return;
    // An empty candidate is webrtcbin's end-of-candidates.
    g_signal_emit_by_name(peer->webrtc, "add-ice-candidate", mline, candidate ? candidate : "");
}

// MARK: - stats

typedef struct {
    const gchar *selected_pair;
    const gchar *local_candidate;
    char candidate_type[16];
    double rtt;
    int has_rtt;
} StatsScan;

static gboolean scan_pair(GQuark field, const GValue *value, gpointer data) {
    (void)field;
    StatsScan *scan = data;
    if (!GST_VALUE_HOLDS_STRUCTURE(value)) return TRUE;
    const GstStructure *s = gst_value_get_structure(value);
    const gchar *name = gst_structure_get_name(s);
    if (!strcmp(name, "transport") && !scan->selected_pair)
        scan->selected_pair = gst_structure_get_string(s, "selected-candidate-pair-id");
    if (!strcmp(name, "remote-inbound-rtp")) {
        double rtt = 0;
        if (gst_structure_get_double(s, "round-trip-time", &rtt) && rtt > 0) {
            scan->rtt = rtt * 1000.0;
            scan->has_rtt = 1;
        }
    }
    return TRUE;
}

static gboolean scan_local(GQuark field, const GValue *value, gpointer data) {
    (void)field;
    StatsScan *scan = data;
    if (!GST_VALUE_HOLDS_STRUCTURE(value)) return TRUE;
    const GstStructure *s = gst_value_get_structure(value);
    const gchar *id = gst_structure_get_string(s, "id");
    if (scan->selected_pair && id && !strcmp(id, scan->selected_pair))
        scan->local_candidate = gst_structure_get_string(s, "local-candidate-id");
    return TRUE;
}

static gboolean scan_type(GQuark field, const GValue *value, gpointer data) {
    (void)field;
    StatsScan *scan = data;
    if (!GST_VALUE_HOLDS_STRUCTURE(value)) return TRUE;
    const GstStructure *s = gst_value_get_structure(value);
    const gchar *id = gst_structure_get_string(s, "id");
    // (1.22 labels its own candidates "remote-candidate": the id is what to trust.)
    if (scan->local_candidate && id && !strcmp(id, scan->local_candidate)) {
        const gchar *type = gst_structure_get_string(s, "candidate-type");
        if (type) g_strlcpy(scan->candidate_type, type, sizeof scan->candidate_type);
    }
    return TRUE;
}

// webrtcbin's stats reply as JSON, for call quality (DuetClient's WebRtcBinStats reads it): every field that is a
// number, boolean or string as itself, anything else (enums, flags) as its GStreamer serialization, non-finite
// numbers as null. Structure names become "type", webrtcbin's own "type" field (the same, as an enum) is dropped.
static void append_json_string(GString *out, const gchar *text) {
    g_string_append_c(out, '"');
    for (const guchar *c = (const guchar *)text; *c; c++) {
        if (*c == '"' || *c == '\\') g_string_append_printf(out, "\\%c", *c);
        else if (*c < 0x20) g_string_append_printf(out, "\\u%04x", *c);
        else g_string_append_c(out, (gchar)*c);
    }
    g_string_append_c(out, '"');
}

static void append_json_number(GString *out, double value) {
    if (isfinite(value)) g_string_append_printf(out, "%.17g", value);
    else g_string_append(out, "null");
}

static void append_json_value(GString *out, const GValue *value) {
    switch (G_TYPE_FUNDAMENTAL(G_VALUE_TYPE(value))) {
    case G_TYPE_INT: g_string_append_printf(out, "%d", g_value_get_int(value)); return;
    case G_TYPE_UINT: g_string_append_printf(out, "%u", g_value_get_uint(value)); return;
    case G_TYPE_INT64: g_string_append_printf(out, "%" G_GINT64_FORMAT, g_value_get_int64(value)); return;
    case G_TYPE_UINT64: g_string_append_printf(out, "%" G_GUINT64_FORMAT, g_value_get_uint64(value)); return;
    case G_TYPE_LONG: g_string_append_printf(out, "%ld", g_value_get_long(value)); return;
    case G_TYPE_ULONG: g_string_append_printf(out, "%lu", g_value_get_ulong(value)); return;
    case G_TYPE_DOUBLE: append_json_number(out, g_value_get_double(value)); return;
    case G_TYPE_FLOAT: append_json_number(out, g_value_get_float(value)); return;
    case G_TYPE_BOOLEAN: g_string_append(out, g_value_get_boolean(value) ? "true" : "false"); return;
    case G_TYPE_STRING: {
        const gchar *text = g_value_get_string(value);
        if (text) append_json_string(out, text);
        else g_string_append(out, "null");
        return;
    }
    default: {
        gchar *text = gst_value_serialize(value);
        if (text) append_json_string(out, text);
        else g_string_append(out, "null");
        g_free(text);
    }
    }
}

typedef struct {
    GString *out;
    gboolean first;
} JsonObject;

static gboolean append_json_field(GQuark field, const GValue *value, gpointer data) {
    JsonObject *object = data;
    const gchar *name = g_quark_to_string(field);
    if (!strcmp(name, "type") || GST_VALUE_HOLDS_STRUCTURE(value)) return TRUE;
    g_string_append(object->out, object->first ? "" : ",");
    object->first = FALSE;
    append_json_string(object->out, name);
    g_string_append_c(object->out, ':');
    append_json_value(object->out, value);
    return TRUE;
}

static gboolean append_json_stat(GQuark field, const GValue *value, gpointer data) {
    (void)field;
    JsonObject *array = data;
    if (!GST_VALUE_HOLDS_STRUCTURE(value)) return TRUE;
    const GstStructure *s = gst_value_get_structure(value);
    g_string_append(array->out, array->first ? "{" : ",{");
    array->first = FALSE;
    g_string_append(array->out, "\"type\":");
    append_json_string(array->out, gst_structure_get_name(s));
    JsonObject object = {array->out, FALSE};
    gst_structure_foreach(s, append_json_field, &object);
    g_string_append_c(array->out, '}');
    return TRUE;
}

static char *stats_json(const GstStructure *stats) {
    GString *out = g_string_new("[");
    JsonObject array = {out, TRUE};
    gst_structure_foreach(stats, append_json_stat, &array);
    g_string_append_c(out, ']');
    return g_string_free(out, FALSE);
}

void duet_stats_clear(DuetStats *stats) {
    g_free(stats->report_json);
    stats->report_json = NULL;
}

// The decoded audio's count, and its level over the last LEVEL_WINDOW_US: the mean power of the measurements
// that arrived in it, and their highest peak; the floor when none did (nothing decoded, or silence).
static void audio_stats(DuetPeer *peer, DuetStats *out) {
    gint64 since = g_get_monotonic_time() - LEVEL_WINDOW_US;
    double power = 0, peak = -INFINITY;
    int measured = 0;
    pthread_mutex_lock(&peer->audio_lock);
    out->audio_samples = peer->audio_samples;
    out->audio_ssrc = peer->audio_ssrc;
    out->video_ssrc = peer->video_ssrc;
    g_strlcpy(out->audio_codec, peer->audio_codec, sizeof out->audio_codec);
    g_strlcpy(out->video_codec, peer->video_codec, sizeof out->video_codec);
    for (guint i = 0; i < LEVEL_SLOTS; i++) {
        const LevelSlot *slot = &peer->levels[i];
        if (slot->at == 0 || slot->at < since) continue;
        power += slot->power;
        peak = fmax(peak, slot->peak);
        measured++;
    }
    pthread_mutex_unlock(&peer->audio_lock);
    double rms = measured && power > 0 ? 10.0 * log10(power / measured) : LEVEL_FLOOR_DB;
    out->audio_level_db = fmax(rms, LEVEL_FLOOR_DB);
    out->audio_peak_db = isfinite(peak) ? fmax(peak, LEVEL_FLOOR_DB) : LEVEL_FLOOR_DB;
}

void duet_peer_counters(DuetPeer *peer, DuetStats *out) {
    memset(out, 0, sizeof *out);
    out->video_frames = g_atomic_int_get(&peer->video_frames);
    out->audio_packets = g_atomic_int_get(&peer->audio_packets);
    out->video_width = g_atomic_int_get(&peer->video_width);
    out->video_height = g_atomic_int_get(&peer->video_height);
    audio_stats(peer, out);
}

// A get-stats reply awaited with a deadline. webrtcbin drops an operation still queued when its pipeline stops, without
// replying: a bare gst_promise_wait would then block its caller (one of the engine's tasks) for good, holding the
// peer — and its pipeline — with it (found by the review of issue 53's leak check). Two references: the waiter's and
// the promise's (given back when webrtcbin lets the promise go, answered or not).
typedef struct {
    gint refs;
    GMutex lock;
    GCond cond;
    gboolean done;
    GstStructure *reply;  // a copy, the waiter's once done
} StatsWait;

static void stats_wait_unref(gpointer data) {
    StatsWait *wait = data;
    if (!g_atomic_int_dec_and_test(&wait->refs)) return;
    if (wait->reply) gst_structure_free(wait->reply);
    g_mutex_clear(&wait->lock);
    g_cond_clear(&wait->cond);
    g_free(wait);
}

static void on_stats(GstPromise *promise, gpointer data) {
    StatsWait *wait = data;
    // Called once the promise has its result (replied, or interrupted / expired): waiting returns it at once.
    const GstStructure *reply = gst_promise_wait(promise) == GST_PROMISE_RESULT_REPLIED ? gst_promise_get_reply(promise) : NULL;
    g_mutex_lock(&wait->lock);
    wait->reply = reply ? gst_structure_copy(reply) : NULL;
    wait->done = TRUE;
    g_cond_signal(&wait->cond);
    g_mutex_unlock(&wait->lock);
}

void duet_peer_stats(DuetPeer *peer, DuetStats *out) {
    duet_peer_counters(peer, out);
    if (!is_open(peer)) return;  // a stopped webrtcbin would never answer
    StatsWait *wait = g_new0(StatsWait, 1);
    wait->refs = 2;
    g_mutex_init(&wait->lock);
    g_cond_init(&wait->cond);
    GstPromise *promise = gst_promise_new_with_change_func(on_stats, wait, stats_wait_unref);
    g_signal_emit_by_name(peer->webrtc, "get-stats", NULL, promise);
    gst_promise_unref(promise);  // webrtcbin holds its own while the operation lives
    // webrtcbin answers within milliseconds; two seconds is a webrtcbin that will not.
    gint64 deadline = g_get_monotonic_time() + 2 * G_TIME_SPAN_SECOND;
    g_mutex_lock(&wait->lock);
    while (!wait->done && g_cond_wait_until(&wait->cond, &wait->lock, deadline)) {}
    GstStructure *stats = wait->reply;
    wait->reply = NULL;
    g_mutex_unlock(&wait->lock);
    stats_wait_unref(wait);
    if (!stats) return;
    StatsScan scan = {0};
    gst_structure_foreach(stats, scan_pair, &scan);
    gst_structure_foreach(stats, scan_local, &scan);
    gst_structure_foreach(stats, scan_type, &scan);
    out->report_json = stats_json(stats);
    g_strlcpy(out->candidate_type, scan.candidate_type, sizeof out->candidate_type);
    out->rtt_ms = scan.rtt;
    out->has_rtt = scan.has_rtt;
    gst_structure_free(stats);
}

// webrtcbin 1.22 does not compare the handshake's certificate with the remote description's a=fingerprint (its DTLS
// decoder accepts any): the runtime reads them here and compares them itself. Every transceiver's transports are
// read, not only the first: webrtcbin makes new transceivers for an offer whose m-lines it does not match with its own
// (an aiortc offer), and the first is then one no handshake ever touches. Each distinct certificate once.
static void append_remote_certificate(GstWebRTCDTLSTransport *transport, GString *out) {
    if (!transport) return;
    gchar *pem = NULL;
    g_object_get(transport, "remote-certificate", &pem, NULL);
    gst_object_unref(transport);
    if (!pem) return;
    if (!strstr(out->str, pem)) g_string_append(out, pem);
    g_free(pem);
}

char *duet_peer_remote_certificates(DuetPeer *peer) {
    if (g_atomic_int_get(&peer->closed)) return NULL;
    GArray *transceivers = NULL;
    g_signal_emit_by_name(peer->webrtc, "get-transceivers", &transceivers);
    if (!transceivers) return NULL;
    GString *out = g_string_new(NULL);
    for (guint i = 0; i < transceivers->len; i++) {
        GstWebRTCRTPTransceiver *transceiver = g_array_index(transceivers, GstWebRTCRTPTransceiver *, i);
        GstWebRTCRTPSender *sender = NULL;
        GstWebRTCRTPReceiver *receiver = NULL;
        g_object_get(transceiver, "sender", &sender, "receiver", &receiver, NULL);
        GstWebRTCDTLSTransport *transport = NULL;
        if (sender) {
            g_object_get(sender, "transport", &transport, NULL);
            append_remote_certificate(transport, out);
            gst_object_unref(sender);
        }
        if (receiver) {
            transport = NULL;
            g_object_get(receiver, "transport", &transport, NULL);
            append_remote_certificate(transport, out);
            gst_object_unref(receiver);
        }
    }
    g_array_unref(transceivers);
    if (out->len == 0) {
        g_string_free(out, TRUE);
        return NULL;
    }
    return g_string_free(out, FALSE);
}

void duet_string_free(char *text) { g_free(text); }

void duet_peer_free(DuetPeer *peer) {
    g_atomic_int_set(&peer->closed, 1);
    g_signal_handlers_disconnect_by_data(peer->webrtc, peer);
    gst_element_set_state(peer->pipeline, GST_STATE_NULL);
    // Stopped: no streaming thread posts any more.
    GstBus *bus = gst_element_get_bus(peer->pipeline);
    gst_bus_set_sync_handler(bus, NULL, NULL, NULL);
    gst_object_unref(bus);
    peer_unref(peer);
}
