import Foundation
import Glibc
import SystemPackage
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MetadataIndex

/// The audio and video importer (libavformat, in the import worker), on
/// fixtures made by ffmpeg (Tests/Fixtures/import/make-media-fixtures.sh)
/// and hostile files.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct MediaImportTests {
    struct Expected: Sendable, CustomTestStringConvertible {
        var file: String
        var sampleRate: Int64
        var channels: Int64
        var codecs: [String]
        var tagged = true
        var video = false
        var testDescription: String { file }
    }

    static let files: [Expected] = [
        Expected(file: "song.mp3", sampleRate: 44100, channels: 2, codecs: ["mp3"]),
        Expected(file: "song.flac", sampleRate: 44100, channels: 1, codecs: ["flac"]),
        Expected(file: "song.opus", sampleRate: 48000, channels: 2, codecs: ["opus"]),
        Expected(file: "song.m4a", sampleRate: 44100, channels: 2, codecs: ["aac"]),
        Expected(file: "song.wav", sampleRate: 44100, channels: 1, codecs: ["pcm_s16le"], tagged: false),
        Expected(file: "clip.mp4", sampleRate: 44100, channels: 1, codecs: ["mpeg4", "aac"], video: true),
        Expected(file: "clip.mov", sampleRate: 44100, channels: 1, codecs: ["mpeg4", "aac"], video: true),
        Expected(file: "clip.webm", sampleRate: 48000, channels: 1, codecs: ["vp8", "opus"], video: true),
        Expected(file: "clip.mkv", sampleRate: 44100, channels: 1, codecs: ["mpeg4", "flac"], video: true),
    ]

    @Test(arguments: files)
    func durationTagsAndStreams(expected: Expected) {
        let report = ImportWorkerTests.importFile(OfficeImportTests.fixture(expected.file))
        let values = report.values
        #expect(values[.importError] == nil, "\(String(describing: values[.importError]))")
        guard case .real(let duration)? = values[.durationSeconds] else {
            Issue.record("no duration")
            return
        }
        #expect(abs(duration - 1) < 0.1)
        #expect(values[.audioSampleRate] == .integer(expected.sampleRate))
        #expect(values[.audioChannelCount] == .integer(expected.channels))
        #expect(values[.codecs] == .list(expected.codecs))
        if expected.tagged {
            #expect(values[.title] == .text(Array("Harbour Song".utf8)))
            #expect(values[.authors] == .list(["The Keepers"]))
            #expect(values[.album] == .text(Array("Lighthouse Sessions".utf8)))
            #expect(values[.musicalGenre] == .text(Array("Folk".utf8)))
            #expect(values[.recordingYear] == .integer(2019))
        }
        if expected.video {
            #expect(values[.pixelWidth] == .integer(160))
            #expect(values[.pixelHeight] == .integer(120))
        } else {
            #expect(values[.pixelWidth] == nil)
        }
    }

    @Test func brokenMediaFailsWithAReason() throws {
        let temp = try TemporaryDirectory()
        let clip = try Data(contentsOf: URL(fileURLWithPath: OfficeImportTests.fixture("clip.mp4").string))
        try temp.file(Array("cut.mp4".utf8), contents: Array(clip.prefix(300)))
        try temp.file(
            Array("noise.mp3".utf8), contents: (0..<20000).map { UInt8(truncatingIfNeeded: $0 &* 2654435761 >> 7) })
        try temp.file(Array("empty.ogg".utf8), contents: [])
        for name in ["cut.mp4", "empty.ogg"] {
            let report = ImportWorkerTests.importFile(temp.path.appending(name))
            #expect(report.failure == nil, "\(name): the worker survives")
            let reason = report.steps.last?.failure?.reason ?? ""
            #expect(
                reason.hasPrefix("not a readable audio or video file") || reason.hasPrefix("no readable stream"),
                "\(name): \(reason)")
        }
        // Noise may pass for MPEG audio frames (they have no magic number):
        // whatever libavformat makes of it, the worker answers.
        #expect(ImportWorkerTests.importFile(temp.path.appending("noise.mp3")).failure == nil)
    }
}
