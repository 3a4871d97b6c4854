#!/usr/bin/env bash
# Remakes the audio and video fixtures (committed, a few KB each) with
# ffmpeg: one second of a 440 Hz tone (and for video a small test pattern),
# tagged with known title, artist, album, genre and year.
set -euo pipefail
cd "$(dirname "$0")"
tags=(-metadata title="Harbour Song" -metadata artist="The Keepers" -metadata album="Lighthouse Sessions"
      -metadata genre="Folk" -metadata date="2019")
tone=(-f lavfi -i "sine=frequency=440:duration=1:sample_rate=44100")
ff() { ffmpeg -nostdin -loglevel error -y "$@"; }
ff "${tone[@]}" -ac 2 -c:a libmp3lame -b:a 64k "${tags[@]}" song.mp3
ff "${tone[@]}" -ac 1 -c:a flac "${tags[@]}" song.flac
ff "${tone[@]}" -ar 48000 -ac 2 -c:a libopus -b:a 32k "${tags[@]}" song.opus
ff "${tone[@]}" -ac 2 -c:a aac -b:a 64k "${tags[@]}" song.m4a
ff "${tone[@]}" -ac 1 -c:a pcm_s16le song.wav
video=(-f lavfi -i "testsrc=size=160x120:rate=10:duration=1" -f lavfi -i "sine=frequency=440:duration=1")
ff "${video[@]}" -c:v mpeg4 -b:v 100k -c:a aac -b:a 32k -shortest "${tags[@]}" clip.mp4
ff "${video[@]}" -c:v mpeg4 -c:a aac -shortest "${tags[@]}" clip.mov
ff "${video[@]}" -c:v libvpx -b:v 100k -c:a libopus -shortest "${tags[@]}" clip.webm
ff "${video[@]}" -c:v mpeg4 -c:a flac -shortest "${tags[@]}" clip.mkv
