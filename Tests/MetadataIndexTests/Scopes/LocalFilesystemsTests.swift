import SystemPackage
import Testing

@testable import MetadataIndex

/// Which filesystems the system index covers when none are named: the disk
/// filesystems of the mount table, each device once, none where updatedb
/// prunes, none of the memory, network or pseudo kinds.
@Suite struct LocalFilesystemsTests {
    @Test func diskFilesystemsOnceEachOutsidePrunedPaths() {
        let mountinfo = """
            22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
            23 22 0:21 / /proc rw,nosuid - proc proc rw
            24 22 0:22 / /sys rw - sysfs sysfs rw
            25 22 0:5 / /dev rw - devtmpfs udev rw
            26 22 253:2 / /home rw,relatime - xfs /dev/vda2 rw
            27 22 0:30 / /tmp rw - tmpfs tmpfs rw
            28 22 253:3 / /media/usb rw - ext4 /dev/sdb1 rw
            29 26 253:2 /alice /srv/alice rw - xfs /dev/vda2 rw
            30 22 253:4 / /var/lib/data\\040store rw shared:5 master:2 - btrfs /dev/vda4 rw
            31 22 0:40 / /mnt/nfs rw - nfs4 server:/export rw
            32 22 253:5 / /data rw - fuseblk /dev/sdc1 rw
            33 22 253:1 / /var/lib/docker/overlay rw - ext4 /dev/vda1 rw
            """
        #expect(
            LocalFilesystems.parse(mountinfo).map(\.string) == ["/", "/home", "/var/lib/data store"])
    }
}
