## The bin page (/bins/{bin}).

bin-title = Бін { $bin } · hookbin
copy = Копіювати
bin-your-url = Ваша URL-адреса
bin-expires = Видаляється
bin-cap = { $count ->
    [one] / { $n } запит
    [few] / { $n } запити
   *[many] / { $n } запитів
}
bin-requests = Запити
bin-clear-confirm = Видалити всі запити в цьому біні?
bin-clear = Очистити
bin-search-label = Пошук у запитах
bin-search-help = Умови: method:, path:, header:НАЗВА, header:НАЗВА=ТЕКСТ, body:, просто слово або "текст у лапках"; -умова виключає
bin-search = Знайти
bin-search-clear = Скинути
bin-search-error = Не вдалося виконати пошук: { $error }
bin-filter-note = Показано лише запити, що відповідають пошуку, зокрема нові:
bin-newest = ← Найновіші запити
bin-newer = Надійшли нові запити: показати їх
bin-no-match = Жоден запит не відповідає цьому пошуку.
bin-no-match-page = Жоден запит на цій сторінці не відповідає цьому пошуку.
bin-no-match-stopped = Пошук зупинився завчасно: продовжте його за посиланням «Старіші запити».
bin-waiting = Чекаємо на перший запит…
bin-older = Старіші запити →
bin-row-truncated = (обрізано)
bin-selected = Вибраний запит
bin-all-requests = ← Усі запити
bin-gone-title = Цього запиту більше немає
bin-gone = Його видалили або витіснили, щоб звільнити місце для новіших.
bin-fix-title = Виправте пошук
bin-fix = Що не так із пошуковим запитом, написано біля поля пошуку вище.
bin-nomatch-title = Нічого не знайдено
bin-nomatch = Поки жоден запит не відповідає цьому пошуку. Нові відповідні з'являться тут одразу.
bin-waiting-hint = Надішліть будь-що на вашу URL-адресу, і запит одразу з'явиться тут, без перезавантаження.
bin-pick-title = Виберіть запит
bin-pick = Виберіть запит у списку, щоб побачити його тут.
bin-or-paste = Або вставте вашу URL-адресу в налаштування webhook у сервісу-відправника:
bin-settings = Налаштування біна
bin-response = Відповідь
bin-not-saved = Не збережено: { $error }
bin-status = Статус
bin-delay = Затримка (мс)
bin-headers = Заголовки
bin-headers-hint = по одному на рядок,
bin-body = Тіло
bin-save = Зберегти відповідь
bin-reset = Повернути типову відповідь (200 ok)
bin-delete-confirm = Видалити цей бін і всі його запити? URL-адреса перестане працювати.
bin-delete = Видалити бін
bin-delete-hint = URL-адреса перестане працювати, усі запити буде видалено.
bin-answers-default = Відповідає 200 з тілом "ok" (типово).
bin-answers = Відповідає { $status }
bin-answers-headers = { $count ->
    [one] { $n } заголовок
    [few] { $n } заголовки
   *[many] { $n } заголовків
}
bin-answers-body = тіло { $size }
bin-answers-delay = із затримкою { $ms } мс
bin-form-line = заголовки, рядок { $line }: очікувалося "Назва: значення", отримано { $got }
bin-private-label = Приватний · посилання для перегляду
bin-private-hint = Лише це посилання відкриває сторінки та API біна; URL-адреса для приймання цього не може. hookbin зберігає лише її хеш: бережіть її.
bin-actions = Дії з біном
bin-export-har = Експорт HAR
bin-export-json = Експорт JSON
bin-delete-short = Видалити бін
bin-follow = Стежити за новими
