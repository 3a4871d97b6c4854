import CFFmpeg
import Foundation
import MDQCore
import MDQImport
import MDQSystem

/// Audio and video files, read with FFmpeg's libavformat: duration, title,
/// artist (as `kMDItemAuthors`), album, genre, recording year, the audio
/// stream's sample rate, channels and bit rate, the codecs of every
/// stream, and for video the picture's size and bit rate. Tags come from the
/// container and, where a format keeps them there (Ogg, Opus), from the
/// audio stream.
///
/// Probing is bounded (5 MB and 5 s of stream read to find the streams), so
/// a file that claims endless streams costs little; cover art in an audio
/// file is not taken for a video. libavformat reads the worker's descriptor
/// through read and seek callbacks (`FileSource`), never a path or a
/// protocol of its own: the worker may open nothing, and a file that asks
/// for another (a playlist, a reference movie) is refused by the sandbox.
struct MediaImporter: Importer {
    var name: String { "media" }
    var contentTypes: [String] { ["public.audiovisual-content"] }
    var attributes: [MetadataAttribute] {
        [
            .durationSeconds, .title, .authors, .album, .musicalGenre, .recordingYear, .audioSampleRate,
            .audioChannelCount, .audioBitRate, .codecs, .pixelWidth, .pixelHeight, .videoBitRate,
        ]
    }

    private static let quiet: Void = av_log_set_level(AV_LOG_QUIET)

    /// libavformat's logging set before the worker is sandboxed.
    func prepareForConfinement() {
        _ = Self.quiet
    }

    func extract(from file: ContentFile, type: String, limits: ImportLimits) throws(ImportFailure) -> ImportedValues {
        _ = Self.quiet
        let source = FileSource(file)
        return try withExtendedLifetime(source) { () throws(ImportFailure) -> ImportedValues in
            try extract(from: source)
        }
    }

    private func extract(from source: FileSource) throws(ImportFailure) -> ImportedValues {
        let bufferSize: Int32 = 1 << 16
        guard let format = avformat_alloc_context(), let buffer = av_malloc(Int(bufferSize)) else {
            throw ImportFailure("out of memory")
        }
        guard
            let io = avio_alloc_context(
                buffer.assumingMemoryBound(to: UInt8.self), bufferSize, 0,
                Unmanaged.passUnretained(source).toOpaque(), { FileSource.read($0, $1, $2) }, nil,
                { FileSource.seek($0, $1, $2) })
        else {
            av_free(buffer)
            avformat_free_context(format)
            throw ImportFailure("out of memory")
        }
        var custom: UnsafeMutablePointer<AVIOContext>? = io
        defer {
            // libavformat may have replaced the buffer; it is freed, then
            // the context (neither is freed with the format's).
            av_freep(&custom!.pointee.buffer)
            avio_context_free(&custom)
        }
        format.pointee.pb = io
        format.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        var context: UnsafeMutablePointer<AVFormatContext>? = format
        var options: OpaquePointer?
        av_dict_set(&options, "probesize", "5000000", 0)
        av_dict_set(&options, "analyzeduration", "5000000", 0)
        defer { av_dict_free(&options) }
        // No name: formats are found by their bytes, as before with the
        // descriptor's /proc name, which had no extension either. On
        // failure libavformat frees the format context itself.
        let opened = avformat_open_input(&context, "", nil, &options)
        guard opened == 0, let format = context else {
            throw ImportFailure("not a readable audio or video file: \(Self.message(opened))")
        }
        defer { avformat_close_input(&context) }
        let found = avformat_find_stream_info(format, nil)
        guard found >= 0 else { throw ImportFailure("no readable stream: \(Self.message(found))") }
        var values = ImportedValues()
        if format.pointee.duration != mdq_av_nopts_value(), format.pointee.duration > 0 {
            values[.durationSeconds] = .real(Double(format.pointee.duration) / Double(mdq_av_time_base()))
        }
        var tags = Self.dictionary(format.pointee.metadata)
        var codecs: [String] = []
        var audioStreams = 0
        for index in 0..<Int(format.pointee.nb_streams) {
            guard let stream = format.pointee.streams[index], let parameters = stream.pointee.codecpar else { continue }
            let codec = String(cString: avcodec_get_name(parameters.pointee.codec_id))
            switch parameters.pointee.codec_type {
            case AVMEDIA_TYPE_AUDIO:
                audioStreams += 1
                if !codecs.contains(codec) { codecs.append(codec) }
                if audioStreams == 1 {
                    if parameters.pointee.sample_rate > 0 {
                        values[.audioSampleRate] = .integer(Int64(parameters.pointee.sample_rate))
                    }
                    if parameters.pointee.ch_layout.nb_channels > 0 {
                        values[.audioChannelCount] = .integer(Int64(parameters.pointee.ch_layout.nb_channels))
                    }
                    if parameters.pointee.bit_rate > 0 {
                        values[.audioBitRate] = .integer(parameters.pointee.bit_rate)
                    }
                    for (key, value) in Self.dictionary(stream.pointee.metadata) where tags[key] == nil {
                        tags[key] = value
                    }
                }
            case AVMEDIA_TYPE_VIDEO:
                // Cover art is a one-picture "video" stream.
                guard stream.pointee.disposition & AV_DISPOSITION_ATTACHED_PIC == 0 else { continue }
                if !codecs.contains(codec) { codecs.append(codec) }
                if values[.pixelWidth] == nil, parameters.pointee.width > 0, parameters.pointee.height > 0 {
                    values[.pixelWidth] = .integer(Int64(parameters.pointee.width))
                    values[.pixelHeight] = .integer(Int64(parameters.pointee.height))
                    if parameters.pointee.bit_rate > 0 {
                        values[.videoBitRate] = .integer(parameters.pointee.bit_rate)
                    }
                }
            default:
                break
            }
        }
        if values[.audioBitRate] == nil, values[.pixelWidth] == nil, audioStreams == 1, format.pointee.bit_rate > 0 {
            // One audio stream and nothing else: the container's rate is its.
            values[.audioBitRate] = .integer(format.pointee.bit_rate)
        }
        if !codecs.isEmpty { values[.codecs] = .list(codecs) }
        if let title = tags["title"] { values[.title] = .text(Array(title.utf8)) }
        if let artist = tags["artist"] ?? tags["album_artist"] ?? tags["author"] {
            values[.authors] = .list([artist])
        }
        if let album = tags["album"] { values[.album] = .text(Array(album.utf8)) }
        if let genre = tags["genre"] { values[.musicalGenre] = .text(Array(genre.utf8)) }
        if let date = tags["date"] ?? tags["year"] ?? tags["creation_time"],
            let year = Int64(date.prefix(4)), (1000...9999).contains(year)
        {
            values[.recordingYear] = .integer(year)
        }
        return values
    }

    /// A metadata dictionary with lowercased keys (Ogg writes `TITLE`).
    private static func dictionary(_ dictionary: OpaquePointer?) -> [String: String] {
        var result: [String: String] = [:]
        var entry: UnsafeMutablePointer<AVDictionaryEntry>?
        while let next = av_dict_get(dictionary, "", entry, AV_DICT_IGNORE_SUFFIX) {
            entry = next
            let key = String(cString: next.pointee.key).lowercased()
            let value = String(cString: next.pointee.value).trimmingCharacters(in: .whitespacesAndNewlines)
            if !value.isEmpty && result[key] == nil { result[key] = value }
        }
        return result
    }

    private static func message(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        av_strerror(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The worker's descriptor as libavformat reads it: a position, and read
/// and seek callbacks over `ContentFile` (outside its budget: libavformat
/// bounds its probing itself, and seeks past what it skips, as with a file
/// it opens).
private final class FileSource {
    let file: ContentFile
    var position: Int64 = 0

    init(_ file: ContentFile) { self.file = file }

    private static func of(_ opaque: UnsafeMutableRawPointer?) -> FileSource {
        Unmanaged<FileSource>.fromOpaque(opaque!).takeUnretainedValue()
    }

    /// Up to `size` bytes at the position into `buffer`: their count,
    /// `AVERROR_EOF` at the end, or `AVERROR(errno)`.
    static func read(_ opaque: UnsafeMutableRawPointer?, _ buffer: UnsafeMutablePointer<UInt8>?, _ size: Int32)
        -> Int32
    {
        let source = of(opaque)
        guard let buffer, size > 0 else { return 0 }
        switch source.file.readOutsideBudget(
            into: UnsafeMutableRawBufferPointer(start: buffer, count: Int(size)), at: source.position)
        {
        case .success(0): return mdq_averror_eof()
        case .success(let count):
            source.position += Int64(count)
            return Int32(count)
        case .failure(let error): return mdq_averror(error.rawValue)
        }
    }

    /// Moves the position (`SEEK_SET`, `SEEK_CUR`, `SEEK_END`), or tells
    /// the size (`AVSEEK_SIZE`): the new position or the size, or
    /// `AVERROR(EINVAL)` before the start.
    static func seek(_ opaque: UnsafeMutableRawPointer?, _ offset: Int64, _ whence: Int32) -> Int64 {
        let source = of(opaque)
        if whence & AVSEEK_SIZE != 0 { return source.file.size }
        let base: Int64
        switch whence & ~AVSEEK_FORCE {
        case SEEK_SET: base = 0
        case SEEK_CUR: base = source.position
        case SEEK_END: base = source.file.size
        default: return Int64(mdq_averror(EINVAL))
        }
        let (target, overflow) = base.addingReportingOverflow(offset)
        guard !overflow, target >= 0 else { return Int64(mdq_averror(EINVAL)) }
        source.position = target
        return target
    }
}
