#!/usr/bin/env python3
"""Remakes the image fixtures (committed, a few KB each) with Pillow
(pip install pillow): a JPEG with camera EXIF (make, model, exposure,
aperture, ISO, focal length, GPS position and altitude, capture time with
its offset, orientation 6: turned a quarter), a PNG, a GIF, a WebP and a
TIFF of known sizes, and a JPEG whose header claims 65,500 x 65,500 pixels."""
import os
from PIL import Image
from PIL.TiffImagePlugin import IFDRational
os.chdir(os.path.dirname(os.path.abspath(__file__)))

def rational(numerator, denominator=1):
    return IFDRational(numerator, denominator)

image = Image.new("RGB", (64, 48), (200, 120, 40))
exif = Image.Exif()
exif[0x010F] = "Fictional Optics"      # Make
exif[0x0110] = "FO-1 Mark II"          # Model
exif[0x0112] = 6                        # Orientation: turned 90 degrees
photo = exif.get_ifd(0x8769)
photo[0x829A] = rational(1, 250)      # ExposureTime
photo[0x829D] = rational(28, 10)          # FNumber
photo[0x8827] = 400                    # ISOSpeedRatings
photo[0x920A] = rational(35)           # FocalLength
photo[0x9003] = "2024:06:01 18:45:10"  # DateTimeOriginal
photo[0x9011] = "+02:00"               # OffsetTimeOriginal
gps = exif.get_ifd(0x8825)
gps[1] = "N"; gps[2] = (rational(48), rational(51), rational(296, 10))
gps[3] = "E"; gps[4] = (rational(2), rational(17), rational(402, 10))
gps[5] = b"\x00"; gps[6] = rational(35)
image.save("photo.jpg", exif=exif.tobytes(), quality=80)
Image.new("RGBA", (300, 200), (0, 0, 255, 128)).save("diagram.png")
Image.new("P", (40, 30)).save("anim.gif")
Image.new("RGB", (120, 90), (10, 200, 10)).save("leaf.webp")
Image.new("RGB", (33, 77), (255, 255, 255)).save("scan.tiff")

# A baseline JPEG whose SOF0 claims 65,500 x 65,500 pixels (4.3 gigapixels).
data = bytearray(open("photo.jpg", "rb").read())
i = 2
while i < len(data):
    marker = data[i + 1]
    length = int.from_bytes(data[i + 2:i + 4], "big")
    if marker in (0xC0, 0xC2):
        data[i + 5:i + 7] = (65500).to_bytes(2, "big")
        data[i + 7:i + 9] = (65500).to_bytes(2, "big")
        break
    i += 2 + length
open("absurd.jpg", "wb").write(bytes(data))
