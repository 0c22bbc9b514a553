package pm_notebook;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.sql.Array;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Types;
import java.util.Arrays;
import java.util.Calendar;
import java.util.TimeZone;

/**
 * Reads a JDBC ResultSet column-wise in chunks and writes each column of a chunk, in Apache Arrow's memory
 * layout, straight into memory owned by the caller, so Python crosses the JNI boundary a few times per chunk
 * instead of once per cell and no Java array outlives the chunk.
 *
 * <p>Use: {@link #fetch} reads up to maxRows rows into buffers this reader reuses from chunk to chunk (they
 * grow to the largest chunk and stay, so the Java heap holds one chunk at most); {@link #layout} says how many
 * bytes each column needs and where its parts go; {@link #write} copies one column into direct ByteBuffers
 * (views of memory Python allocated for Arrow). A column's main region holds, each part starting at a
 * multiple of 64 bytes:
 *
 * <ul>
 *   <li>its validity bitmap (bit set = not NULL, LSB first), only when the column has NULLs;
 *   <li>values: int64 for LONG/TIMESTAMP (epoch ms), float64 for DOUBLE, int32 epoch days for DATE, a bitmap for
 *       BOOL, int32 offsets (rows + 1) into the UTF-8 data for STRING, int32 list offsets (rows + 1) for ARRAY;
 *   <li>ARRAY only: the children's validity bitmap (when one is NULL) and their int32 offsets.
 * </ul>
 *
 * <p>STRING and ARRAY columns have a second region, the UTF-8 bytes of the strings (of ARRAY's children), so
 * the text can live on in pandas after the offsets are dropped.
 */
public final class ColumnarReader {
    public static final int LONG = 0;
    public static final int DOUBLE = 1;
    public static final int BOOL = 2;
    public static final int STRING = 3;
    public static final int TIMESTAMP = 4;
    public static final int DATE = 5;
    public static final int ARRAY = 6;

    /** Longs per column in {@link #layout}. */
    public static final int LAYOUT_SLOTS = 9;
    /**
     * Slots of {@link #layout}: bytes of the main region, NULL count, offset of the validity bitmap in it (-1:
     * no NULLs), offset of the values, bytes of UTF-8 data (-1: none, a fixed-width kind), and for ARRAY the
     * number of children, their NULL count, the offsets of their validity bitmap (-1: none) and int32 offsets.
     */
    public static final int TOTAL = 0, NULLS = 1, VALIDITY = 2, VALUES = 3, DATA_LEN = 4, CHILD_COUNT = 5,
            CHILD_NULLS = 6, CHILD_VALIDITY = 7, CHILD_OFFSETS = 8;

    private static final int FIRST_CAPACITY = 1024;
    private static final long MS_PER_DAY = 86_400_000L;
    // 1582-10-15 (the Gregorian cutover of java.sql types) plus a day of margin, in epoch days and ms.
    private static final long GREGORIAN_DAYS = -141_427L + 1;
    private static final long GREGORIAN_MS = GREGORIAN_DAYS * MS_PER_DAY;

    private final ResultSet rs;
    private final int n;
    private final int[] kinds;
    private final String[] names;
    private final String[] typeNames;
    private final Calendar utc = Calendar.getInstance(TimeZone.getTimeZone("UTC"));
    private boolean done;

    // Reused chunk buffers, allocated lazily and grown by doubling.
    private int rows;
    private int capacity;
    private final long[][] longs;
    private final double[][] doubles;
    private final byte[][] nulls;
    private final int[] nullCount;
    private final byte[][] bytes;
    private final int[] byteLen;
    private final int[][] offsets;
    private final int[][] listOffsets;
    private final byte[][] childNulls;
    private final int[] childCount;
    private final int[] childNullCount;
    private byte[] bits = new byte[0];
    private long[] layout;

    public ColumnarReader(ResultSet rs) throws SQLException {
        this.rs = rs;
        ResultSetMetaData md = rs.getMetaData();
        n = md.getColumnCount();
        kinds = new int[n];
        names = new String[n];
        typeNames = new String[n];
        for (int i = 0; i < n; i++) {
            names[i] = md.getColumnLabel(i + 1);
            typeNames[i] = md.getColumnTypeName(i + 1);
            kinds[i] = kindOf(md.getColumnType(i + 1));
        }
        longs = new long[n][];
        doubles = new double[n][];
        nulls = new byte[n][];
        nullCount = new int[n];
        bytes = new byte[n][];
        byteLen = new int[n];
        offsets = new int[n][];
        listOffsets = new int[n][];
        childNulls = new byte[n][];
        childCount = new int[n];
        childNullCount = new int[n];
    }

    static int kindOf(int sqlType) {
        switch (sqlType) {
            case Types.BIGINT: case Types.INTEGER: case Types.SMALLINT: case Types.TINYINT:
                return LONG;
            case Types.DOUBLE: case Types.FLOAT: case Types.REAL: case Types.DECIMAL: case Types.NUMERIC:
                return DOUBLE;
            case Types.BOOLEAN: case Types.BIT:
                return BOOL;
            case Types.TIMESTAMP:
                return TIMESTAMP;
            case Types.DATE:
                return DATE;
            case Types.ARRAY:
                return ARRAY;
            default:
                return STRING;
        }
    }

    public int columnCount() { return n; }
    public int[] kinds() { return kinds.clone(); }
    public String[] names() { return names.clone(); }
    public String[] typeNames() { return typeNames.clone(); }
    public boolean isDone() { return done; }
    public int rows() { return rows; }
    /** Rows the reused buffers hold at most so far (they grow to the largest chunk read). */
    public int capacity() { return capacity; }

    /** Reads up to maxRows rows into the reused buffers; returns the number read (0 once exhausted). */
    public int fetch(int maxRows) throws SQLException {
        rows = 0;
        layout = null;
        Arrays.fill(nullCount, 0);
        Arrays.fill(byteLen, 0);
        Arrays.fill(childCount, 0);
        Arrays.fill(childNullCount, 0);
        if (done || maxRows < 1) {
            return 0;
        }
        if (capacity == 0) {
            grow(Math.min(maxRows, FIRST_CAPACITY));
        }
        while (rows < maxRows) {
            if (!rs.next()) {
                done = true;
                break;
            }
            if (rows == capacity) {
                grow(Math.min(maxRows, capacity * 2));
            }
            for (int c = 0; c < n; c++) {
                readCell(c, c + 1);
            }
            rows++;
        }
        return rows;
    }

    private void grow(int cap) {
        for (int c = 0; c < n; c++) {
            nulls[c] = resize(nulls[c], cap);
            switch (kinds[c]) {
                case LONG: case TIMESTAMP: case DATE:
                    longs[c] = longs[c] == null ? new long[cap] : Arrays.copyOf(longs[c], cap);
                    break;
                case DOUBLE:
                    doubles[c] = doubles[c] == null ? new double[cap] : Arrays.copyOf(doubles[c], cap);
                    break;
                case BOOL:
                    bytes[c] = resize(bytes[c], cap);
                    break;
                case ARRAY:
                    listOffsets[c] = listOffsets[c] == null ? new int[cap + 1] : Arrays.copyOf(listOffsets[c], cap + 1);
                    if (offsets[c] == null) {
                        offsets[c] = new int[cap + 1];
                        childNulls[c] = new byte[cap];
                        bytes[c] = new byte[Math.max(64, cap * 8)];
                    }
                    break;
                default:
                    offsets[c] = offsets[c] == null ? new int[cap + 1] : Arrays.copyOf(offsets[c], cap + 1);
                    if (bytes[c] == null) {
                        bytes[c] = new byte[Math.max(64, cap * 16)];
                    }
            }
        }
        capacity = cap;
    }

    private static byte[] resize(byte[] a, int cap) {
        return a == null ? new byte[cap] : Arrays.copyOf(a, cap);
    }

    private void setNull(int c, boolean isNull) {
        nulls[c][rows] = (byte) (isNull ? 1 : 0);
        if (isNull) {
            nullCount[c]++;
        }
    }

    private void readCell(int c, int j) throws SQLException {
        switch (kinds[c]) {
            case LONG: {
                long v = rs.getLong(j);
                boolean isNull = rs.wasNull();
                setNull(c, isNull);
                longs[c][rows] = isNull ? 0L : v;
                break;
            }
            case DOUBLE: {
                double v = rs.getDouble(j);
                boolean isNull = rs.wasNull();
                setNull(c, isNull);
                doubles[c][rows] = isNull ? 0.0 : v;
                break;
            }
            case BOOL: {
                boolean v = rs.getBoolean(j);
                boolean isNull = rs.wasNull();
                setNull(c, isNull);
                bytes[c][rows] = (byte) (!isNull && v ? 1 : 0);
                break;
            }
            case TIMESTAMP: {
                // Avatica sends epoch ms (rep LONG) and its accessor answers getLong with that number, which
                // is what getTimestamp(j, utc).getTime() gives too from the Gregorian cutover on,
                // without a Timestamp and a time-zone lookup per cell (5% of the reading at 1M rows). Before
                // it, the driver turns the value into the Julian calendar of java.sql types: read it as ever.
                long v = rs.getLong(j);
                boolean isNull = rs.wasNull();
                if (!isNull && v < GREGORIAN_MS) {
                    v = rs.getTimestamp(j, utc).getTime();
                }
                setNull(c, isNull);
                longs[c][rows] = isNull ? 0L : v;
                break;
            }
            case DATE: {
                // Epoch days (rep INTEGER), as TIMESTAMP above.
                long v = rs.getLong(j);
                boolean isNull = rs.wasNull();
                if (!isNull && v < GREGORIAN_DAYS) {
                    v = Math.floorDiv(rs.getDate(j, utc).getTime(), MS_PER_DAY);
                }
                setNull(c, isNull);
                longs[c][rows] = isNull ? 0L : v;
                break;
            }
            case ARRAY: {
                Array a = rs.getArray(j);
                setNull(c, a == null);
                if (a != null) {
                    Object[] items = (Object[]) a.getArray();
                    for (Object item : items) {
                        appendChild(c, item == null ? null : item.toString());
                    }
                }
                listOffsets[c][rows + 1] = childCount[c];
                break;
            }
            default: {
                String s = rs.getString(j);
                setNull(c, s == null);
                if (s != null) {
                    appendBytes(c, s.getBytes(StandardCharsets.UTF_8));
                }
                offsets[c][rows + 1] = byteLen[c];
            }
        }
    }

    private void appendChild(int c, String s) {
        int k = childCount[c];
        if (k + 1 >= offsets[c].length) {
            offsets[c] = Arrays.copyOf(offsets[c], offsets[c].length * 2);
        }
        if (k >= childNulls[c].length) {
            childNulls[c] = Arrays.copyOf(childNulls[c], childNulls[c].length * 2);
        }
        childNulls[c][k] = (byte) (s == null ? 1 : 0);
        if (s == null) {
            childNullCount[c]++;
        } else {
            appendBytes(c, s.getBytes(StandardCharsets.UTF_8));
        }
        offsets[c][k + 1] = byteLen[c];
        childCount[c] = k + 1;
    }

    private void appendBytes(int c, byte[] b) {
        int len = byteLen[c];
        if (len + b.length > bytes[c].length) {
            bytes[c] = Arrays.copyOf(bytes[c], Math.max(bytes[c].length * 2, len + b.length));
        }
        System.arraycopy(b, 0, bytes[c], len, b.length);
        byteLen[c] = len + b.length;
    }

    private static long align(long x) {
        return (x + 63) & ~63L;
    }

    private static int bitmapBytes(int count) {
        return (count + 7) >>> 3;
    }

    /** Where each column of the current chunk goes: {@link #LAYOUT_SLOTS} longs per column (see the slots). */
    public long[] layout() {
        if (layout == null) {
            layout = computeLayout();
        }
        return layout.clone();
    }

    private long[] computeLayout() {
        long[] out = new long[n * LAYOUT_SLOTS];
        for (int c = 0; c < n; c++) {
            int o = c * LAYOUT_SLOTS;
            int kind = kinds[c];
            long pos = 0;
            out[o + NULLS] = nullCount[c];
            out[o + VALIDITY] = -1;
            out[o + DATA_LEN] = -1;
            out[o + CHILD_VALIDITY] = -1;
            out[o + CHILD_OFFSETS] = -1;
            if (nullCount[c] > 0) {
                out[o + VALIDITY] = pos;
                pos = align(pos + bitmapBytes(rows));
            }
            out[o + VALUES] = pos;
            switch (kind) {
                case LONG: case TIMESTAMP: case DOUBLE:
                    pos += 8L * rows;
                    break;
                case DATE:
                    pos += 4L * rows;
                    break;
                case BOOL:
                    pos += bitmapBytes(rows);
                    break;
                default:  // STRING offsets, ARRAY list offsets
                    pos += 4L * (rows + 1);
            }
            if (kind == STRING || kind == ARRAY) {
                out[o + DATA_LEN] = byteLen[c];
            }
            if (kind == ARRAY) {
                out[o + CHILD_COUNT] = childCount[c];
                out[o + CHILD_NULLS] = childNullCount[c];
                if (childNullCount[c] > 0) {
                    pos = align(pos);
                    out[o + CHILD_VALIDITY] = pos;
                    pos += bitmapBytes(childCount[c]);
                }
                pos = align(pos);
                out[o + CHILD_OFFSETS] = pos;
                pos += 4L * (childCount[c] + 1);
            }
            out[o + TOTAL] = Math.max(64, align(pos));
        }
        return out;
    }

    /**
     * Copies column c of the current chunk as {@link #layout} says: its bitmaps, values and offsets into main
     * (at least TOTAL bytes), and for STRING and ARRAY columns the UTF-8 data into data (DATA_LEN bytes).
     */
    public void write(int c, ByteBuffer main, ByteBuffer data) {
        if (layout == null) {
            layout = computeLayout();
        }
        long[] lay = layout;
        int o = c * LAYOUT_SLOTS;
        ByteBuffer b = main.duplicate().order(ByteOrder.nativeOrder());
        if (lay[o + VALIDITY] >= 0) {
            putBitmap(b, (int) lay[o + VALIDITY], nulls[c], rows, true);
        }
        int values = (int) lay[o + VALUES];
        b.position(values);
        switch (kinds[c]) {
            case LONG: case TIMESTAMP:
                b.asLongBuffer().put(longs[c], 0, rows);
                break;
            case DOUBLE:
                b.asDoubleBuffer().put(doubles[c], 0, rows);
                break;
            case DATE: {
                long[] days = longs[c];
                for (int r = 0; r < rows; r++) {
                    b.putInt(values + 4 * r, (int) days[r]);
                }
                break;
            }
            case BOOL:
                putBitmap(b, values, bytes[c], rows, false);
                break;
            case ARRAY:
                b.asIntBuffer().put(listOffsets[c], 0, rows + 1);
                break;
            default:
                b.asIntBuffer().put(offsets[c], 0, rows + 1);
        }
        if (lay[o + DATA_LEN] > 0) {
            data.duplicate().put(bytes[c], 0, byteLen[c]);
        }
        if (kinds[c] == ARRAY) {
            if (lay[o + CHILD_VALIDITY] >= 0) {
                putBitmap(b, (int) lay[o + CHILD_VALIDITY], childNulls[c], childCount[c], true);
            }
            b.position((int) lay[o + CHILD_OFFSETS]);
            b.asIntBuffer().put(offsets[c], 0, childCount[c] + 1);
        }
    }

    /** Packs flags (one byte each, nonzero = set) into an LSB-first bitmap at pos; invert for validity. */
    private void putBitmap(ByteBuffer b, int pos, byte[] flags, int count, boolean invert) {
        int size = bitmapBytes(count);
        if (bits.length < size) {
            bits = new byte[size];
        }
        for (int i = 0; i < size; i++) {
            int base = i << 3;
            int end = Math.min(8, count - base);
            int v = 0;
            for (int k = 0; k < end; k++) {
                boolean set = flags[base + k] != 0;
                if (set != invert) {
                    v |= 1 << k;
                }
            }
            bits[i] = (byte) v;
        }
        b.position(pos);
        b.put(bits, 0, size);
    }
}
