#!/bin/sh
# Makes the small MP3 files DecoderTests reads. Run from anywhere; it writes next to itself:
#   sh Tests/LeitmotifTests/Fixtures/make-mp3-fixtures.sh
# Needs sox (SoX 14.4.2 here) and lame (LAME 3.100 here): apt-get install sox lame.
#
# Why MP3 files are committed while Vorbis fixtures are made in code: libvorbisenc is a library we
# link anyway (LeitmotifFixtures.VorbisEncoder), but there is no MP3 encoder library in the build.
#
# The sources are synthetic tones from sox, so nothing here is copyrighted and every file can be
# remade. Lengths are odd sample counts (not multiples of the 1152- or 576-sample MP3 frame) so a
# decoder that rounds to whole frames is caught. Each tone has a different frequency per channel
# (440 Hz left, 660 Hz right) so a swapped or duplicated channel is visible. Every file is 64 kbit/s
# CBR (8 KB a second); everything together stays well under 200 KB. Not lower: lame 3.100 silently
# leaves out the LAME/Info tag when it does not fit in one frame at the stream's bitrate (it needs
# about 180 bytes; a 48 kbit/s frame at 44.1 kHz has 156).
#
# `sox -r RATE -n ...`: the rate must come before `-n`, or sox reads "Ns" sample counts at its
# default 48 kHz and converts them (57331s at 44.1 kHz would give 52673 samples). `-D`: no dither,
# so the 16-bit PCM (and with it the MP3) is the same on every run.
#
# Files (name: how, why):
#   lame-44100-stereo.mp3    57331 frames, LAME/Info tag (lame's default). Gapless: libmpg123 trims
#                            encoder delay and padding, so its length must be exactly 57331.
#   lame-44100-mono.mp3      40000 frames, mono, LAME tag.
#   lame-22050-mono.mp3      30001 frames, MPEG-2 (22.05 kHz), mono, LAME tag.
#   lame-48000-stereo.mp3    50001 frames, 48 kHz stereo, LAME tag.
#   notag-44100-stereo.mp3   57331 frames' worth, `lame -t`: no LAME/Info tag, so nothing tells the
#                            decoder the delay or padding: the length comes from scanning every frame
#                            (it is the padded length, longer than 57331).
#   notag-22050-stereo.mp3   30001 frames' worth, 22.05 kHz stereo, no LAME tag.
#   notag-48000-mono.mp3     50001 frames' worth, 48 kHz mono, no LAME tag.
#   id3-tagged.mp3           a 44.1 kHz mono tone of 30000 frames, LAME tag, and an ID3v2.3 tag
#                            written by lame's --tt/--ta/--tl/--tg/--tn/--tv options (--id3v2-only: no ID3v1 tag at the
#                            end): title, artist, album, album artist (TPE2), genre, composer (TCOM),
#                            track 3/12, disc 1/2 (TPOS), TBPM 128, TXXX REPLAYGAIN_TRACK_GAIN/PEAK,
#                            REPLAYGAIN_ALBUM_GAIN/PEAK, TXXX LOOPSTART=1000 and LOOPLENGTH=20000.
#   director-tmoo.mp3        a 44.1 kHz mono tone of 10001 frames, LAME tag, ID3v2.3 (--id3v2-only)
#                            with what a music director reads (DirectorTagTests): TMOO "Brooding",
#                            TXXX METER=3/4, TBPM 96, TCON, TPE2, TCOM, TYER 1997,
#                            TXXX REPLAYGAIN_TRACK_GAIN/ALBUM_GAIN, TXXX LOOPSTART=100, LOOPEND=9000.
#                            (lame writes TMOO, an ID3v2.4 frame, into its v2.3 tag as asked; libmpg123
#                            reads it like any text frame.)
#   director-txxx.mp3        the same tone with the mood and meter only as TXXX frames: MOOD "Calm",
#                            TIMESIGNATURE 6/8 (the names some taggers use instead).
#   gapless-part1.mp3,       one 44.1 kHz stereo tone of 44100 frames cut by sox `trim` into 21017 and
#   gapless-part2.mp3        23083 frames (unequal, so the parts differ), each encoded on its own with
#                            a LAME tag, so each decodes to exactly its length and the two join
#                            without a gap (for gapless
#                            playback tests). Not `lame --nogap`: lame 3.100 writes LAME tags for
#                            such sets (--nogaptags) whose delay/padding do not add up (libmpg123
#                            gives 19631 + 23364 frames, 1105 short of the 44100 put in).
#
# vorbis-setup-sigfpe.ogg in this folder is not made here: DecoderTests.swift says how it was made
# (vorbisSetupHeaderDivisionByZero).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# tone RATE CHANNELS FRAMES OUT.wav
tone() {
  if [ "$2" = 1 ]; then
    sox -D -r "$1" -n -c 1 -b 16 "$4" synth "${3}s" sine 440 vol 0.5
  else
    sox -D -r "$1" -n -c 2 -b 16 "$4" synth "${3}s" sine 440 sine 660 vol 0.5
  fi
}

# encode RATE CHANNELS FRAMES NAME [lame options...]
encode() {
  rate=$1 channels=$2 frames=$3 name=$4
  shift 4
  tone "$rate" "$channels" "$frames" "$work/$name.wav"
  if [ "$channels" = 1 ]; then mode=m; else mode=j; fi
  # --resample keeps the file at the tone's rate (lame may otherwise pick a lower one for a low bitrate).
  case "$rate" in 22050) khz=22.05 ;; 44100) khz=44.1 ;; 48000) khz=48 ;; esac
  lame --quiet -b 64 -m "$mode" --resample "$khz" "$@" "$work/$name.wav" "$here/$name.mp3"
}

encode 44100 2 57331 lame-44100-stereo
encode 44100 1 40000 lame-44100-mono
encode 22050 1 30001 lame-22050-mono
encode 48000 2 50001 lame-48000-stereo
encode 44100 2 57331 notag-44100-stereo -t
encode 22050 2 30001 notag-22050-stereo -t
encode 48000 1 50001 notag-48000-mono -t

encode 44100 1 30000 id3-tagged --id3v2-only \
  --tt "Leitmotif Test Tone" --ta "The Fixture Makers" --tl "Decoder Tests" \
  --tg "Soundtrack" --tn "3/12" \
  --tv "TPE2=Various Fixtures" --tv "TCOM=A. Composer" --tv "TPOS=1/2" --tv "TBPM=128" \
  --tv "TXXX=REPLAYGAIN_TRACK_GAIN=-6.50 dB" --tv "TXXX=REPLAYGAIN_TRACK_PEAK=0.501953" \
  --tv "TXXX=REPLAYGAIN_ALBUM_GAIN=-7.25 dB" --tv "TXXX=REPLAYGAIN_ALBUM_PEAK=0.750000" \
  --tv "TXXX=LOOPSTART=1000" --tv "TXXX=LOOPLENGTH=20000"

encode 44100 1 10001 director-tmoo --id3v2-only --tt "Director Tone" \
  --tg "Ambient" --ty 1997 --tv "TPE2=Score Ensemble" --tv "TCOM=B. Composer" --tv "TBPM=96" \
  --tv "TMOO=Brooding" --tv "TXXX=METER=3/4" \
  --tv "TXXX=REPLAYGAIN_TRACK_GAIN=-3.20 dB" --tv "TXXX=REPLAYGAIN_ALBUM_GAIN=-4.10 dB" \
  --tv "TXXX=LOOPSTART=100" --tv "TXXX=LOOPEND=9000"
encode 44100 1 10001 director-txxx --id3v2-only --tt "Director Tone 2" \
  --tv "TXXX=MOOD=Calm" --tv "TXXX=TIMESIGNATURE=6/8"

# Two halves of one tone, each encoded on its own (see the header for why not --nogap).
tone 44100 2 44100 "$work/whole.wav"
sox "$work/whole.wav" "$work/gapless-part1.wav" trim 0s 21017s
sox "$work/whole.wav" "$work/gapless-part2.wav" trim 21017s
for part in gapless-part1 gapless-part2; do
  lame --quiet -b 64 -m j --resample 44.1 "$work/$part.wav" "$here/$part.mp3"
done

ls -l "$here"/*.mp3
du -ch "$here"/*.mp3 | tail -n 1
