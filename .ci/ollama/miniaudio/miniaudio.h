/*
 * ctxkit's stand-in for miniaudio, used only to build Ollama v0.17.4 from
 * its Go module (.ci/ollama.sh). The module leaves out llama.cpp's vendor/
 * folders, and llama.cpp's tools/mtmd/mtmd-helper.cpp includes
 * "miniaudio/miniaudio.h" for its audio input. These declarations cover
 * the ma_decoder_* and ma_encoder_* calls it makes; every one of them
 * fails, so an audio input is refused as undecodable. ctxkit's tests send
 * no audio.
 */
#ifndef CTXKIT_STANDIN_MINIAUDIO_H
#define CTXKIT_STANDIN_MINIAUDIO_H

#include <stddef.h>
#include <stdint.h>

typedef int ma_result;
typedef uint32_t ma_uint32;
typedef uint64_t ma_uint64;

#define MA_SUCCESS 0
#define MA_NOT_IMPLEMENTED (-29)

typedef enum { ma_format_unknown = 0, ma_format_u8, ma_format_s16, ma_format_s24, ma_format_s32, ma_format_f32 } ma_format;
typedef enum { ma_encoding_format_unknown = 0, ma_encoding_format_wav } ma_encoding_format;

typedef struct {
    ma_format format;
    ma_uint32 channels;
    ma_uint32 sampleRate;
} ma_decoder_config;

typedef struct {
    ma_encoding_format encodingFormat;
    ma_format format;
    ma_uint32 channels;
    ma_uint32 sampleRate;
} ma_encoder_config;

typedef struct { ma_decoder_config config; } ma_decoder;
typedef struct { ma_encoder_config config; } ma_encoder;

static inline ma_decoder_config ma_decoder_config_init(ma_format format, ma_uint32 channels, ma_uint32 sampleRate) {
    ma_decoder_config c;
    c.format = format;
    c.channels = channels;
    c.sampleRate = sampleRate;
    return c;
}

static inline ma_result ma_decoder_init_memory(const void *data, size_t size, const ma_decoder_config *config, ma_decoder *decoder) {
    (void)data; (void)size; (void)config; (void)decoder;
    return MA_NOT_IMPLEMENTED;
}

static inline ma_result ma_decoder_get_length_in_pcm_frames(ma_decoder *decoder, ma_uint64 *length) {
    (void)decoder;
    if (length) *length = 0;
    return MA_NOT_IMPLEMENTED;
}

static inline ma_result ma_decoder_read_pcm_frames(ma_decoder *decoder, void *frames, ma_uint64 count, ma_uint64 *read) {
    (void)decoder; (void)frames; (void)count;
    if (read) *read = 0;
    return MA_NOT_IMPLEMENTED;
}

static inline ma_result ma_decoder_uninit(ma_decoder *decoder) {
    (void)decoder;
    return MA_SUCCESS;
}

static inline ma_encoder_config ma_encoder_config_init(ma_encoding_format encodingFormat, ma_format format, ma_uint32 channels, ma_uint32 sampleRate) {
    ma_encoder_config c;
    c.encodingFormat = encodingFormat;
    c.format = format;
    c.channels = channels;
    c.sampleRate = sampleRate;
    return c;
}

static inline ma_result ma_encoder_init_file(const char *path, const ma_encoder_config *config, ma_encoder *encoder) {
    (void)path; (void)config; (void)encoder;
    return MA_NOT_IMPLEMENTED;
}

static inline ma_result ma_encoder_write_pcm_frames(ma_encoder *encoder, const void *frames, ma_uint64 count, ma_uint64 *written) {
    (void)encoder; (void)frames; (void)count;
    if (written) *written = 0;
    return MA_NOT_IMPLEMENTED;
}

static inline ma_result ma_encoder_uninit(ma_encoder *encoder) {
    (void)encoder;
    return MA_SUCCESS;
}

#endif
